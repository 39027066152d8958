"""HTTP and S3 plumbing of the remote backends: one deadline for a whole request, a cap on the
size of a response, one ``s3://`` parser, and URLs and logs without credentials.

Why this seam
-------------
The ``timeout`` of httpx (and of the SDKs built on it) bounds each socket operation, not the
request: a server that sends one byte a second never trips a 2 s read timeout, and an endless
body never ends. A deadline therefore has to reach every socket read. httpcore lets a connection
pool take its own *network backend* (``ConnectionPool(network_backend=...)``: a public,
documented interface, meant for wrapping), so :class:`DeadlineBackend` wraps the default one and
gives every connect, read and write ``min(its own timeout, time left)``, failing with httpcore's
own ``ConnectTimeout``/``ReadTimeout``/``WriteTimeout`` once no time is left. httpx, the openai
SDK and ollama already turn those into their timeout errors, so nothing above needs to know.

httpx's ``HTTPTransport`` does not forward a network backend, so :func:`deadline_transport`
builds a small transport over the pool itself (the request/response conversion httpx's own
transport does, a few lines), using only public interfaces (httpx ``BaseTransport``/
``SyncByteStream``, httpcore ``ConnectionPool``/``NetworkBackend``): no private attribute is
patched, so an upgrade of either library either keeps working or fails loudly at once. The
alternatives were worse: a watchdog thread cannot portably interrupt a blocking ``recv``;
checking the clock between body chunks still lets one read wait a full read timeout;
``asyncio.timeout`` covers only async code.

The deadline lives in a context variable (:func:`deadline`), so one ``with`` block bounds all a
caller does (redirects included), it follows asyncio tasks, and the SDKs need no change. A
transport used without an enclosing deadline gives each request its own ``timeout``. The LLM,
embedding and transcription clients apply their ``timeout`` once, as a :func:`deadline` block
around each request; their transports, HTTP clients and SDKs get no timeout of their own.

The transport also caps the response body (``max_response_bytes``; an endless 200 body ends at
the cap or the deadline, whichever comes first), counted on the wire and after undoing gzip or
deflate itself in bounded steps (httpx would inflate a compressed body without any limit; see
:mod:`memreader.transport.body`), and is the seam through which a caller may pass their own
transport (``inner``): the deadline between chunks, the cap and the bounded decoding still apply.

httpx (used by ollama) and httpx2 (its fork, used by the openai SDK from version 3) have the same
API under two names, so one implementation serves both (:func:`http_lib`).

Credentials in a URL (``http://user:secret@host``) are taken out of it before any client sees
it (:func:`split_credentials`) and sent as HTTP basic auth, exactly as httpx would have done, so
the libraries' request logs cannot show them; :func:`install_log_redaction` adds a filter to
the HTTP and S3 libraries' loggers that scrubs their own records anyway (URL credentials, URL
queries such as a presigned URL's signature, secret headers and parameters, at every level:
:mod:`~memreader.transport.log_scrub`), for clients built elsewhere.

Failed requests are read once, for every backend (:func:`classify`), and retried by one policy
(:class:`RetryPolicy`): see :mod:`~memreader.transport.failures` and
:mod:`~memreader.transport.retry`.

Modules: :mod:`~memreader.transport.deadline` (the deadline and the network backends),
:mod:`~memreader.transport.body` (the response body: deadline between chunks, decoding, cap,
and what counts as an unreadable reply), :mod:`~memreader.transport.client` (the transport and
clients), :mod:`~memreader.transport.libs` (httpx and httpx2), and
:mod:`~memreader.transport.credentials` (URLs without credentials),
:mod:`~memreader.transport.log_scrub` (log records without secrets),
:mod:`~memreader.transport.addresses` (which addresses are public) and
:mod:`~memreader.transport.s3` (the one ``s3://`` parser and the lazily built S3 client that
fetching, batch jobs and skill folders share).
"""

from __future__ import annotations

from memreader.transport.body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseTooLargeError,
    UnreadableResponseError,
    unreadable_reply,
)
from memreader.transport.client import check_transport, deadline_transport, http_client
from memreader.transport.credentials import install_log_redaction, split_credentials
from memreader.transport.deadline import deadline
from memreader.transport.failures import Failure, classify, retryable_status
from memreader.transport.libs import HTTPLib, http_lib, openai_http_lib
from memreader.transport.retry import RetryPolicy, parse_retry_after

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "Failure",
    "HTTPLib",
    "ResponseTooLargeError",
    "RetryPolicy",
    "UnreadableResponseError",
    "check_transport",
    "classify",
    "deadline",
    "deadline_transport",
    "http_client",
    "http_lib",
    "install_log_redaction",
    "openai_http_lib",
    "parse_retry_after",
    "retryable_status",
    "split_credentials",
    "unreadable_reply",
]
