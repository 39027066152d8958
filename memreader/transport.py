"""HTTP plumbing of the remote backends: one deadline for a whole request, a cap on the size of a
response, and URLs and logs without credentials.

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
transport used without an enclosing deadline gives each request its own ``timeout``.

The transport also caps the response body (``max_response_bytes``; an endless 200 body ends at
the cap or the deadline, whichever comes first) and is the seam through which a caller may pass
their own transport (``inner``): the deadline between chunks and the cap then still apply.

httpx (used by ollama) and httpx2 (its fork, used by the openai SDK from version 3) have the same
API under two names, so one implementation serves both (:func:`http_lib`).

Credentials in a URL (``http://user:secret@host``) are taken out of it before any client sees
it (:func:`split_credentials`) and sent as HTTP basic auth, exactly as httpx would have done, so
the libraries' request logs cannot show them; :func:`install_log_redaction` adds a filter that
masks URL credentials in the libraries' own log records anyway, for clients built elsewhere.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from memreader.errors import MemReaderError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AsyncDeadlineBackend",
    "DeadlineBackend",
    "HTTPLib",
    "ResponseTooLargeError",
    "deadline",
    "deadline_transport",
    "http_client",
    "http_lib",
    "install_log_redaction",
    "openai_http_lib",
    "redact_credentials",
    "split_credentials",
    "time_left",
    "unreadable_reply",
]

logger = logging.getLogger(__name__)

#: The default cap on a response body (32 MiB): far above any chat or embedding answer.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

# The monotonic time by which the current request must be done; None: no deadline.
_DEADLINE: ContextVar[float | None] = ContextVar("memreader_http_deadline", default=None)

_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


class ResponseTooLargeError(MemReaderError):
    """A response body was larger than the configured ``max_response_bytes``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is larger than max_response_bytes ({limit} bytes)")
        self.limit = limit


def unreadable_reply(exc: BaseException) -> str | None:
    """What was wrong with a reply, if ``exc`` (or what caused it) is a failure to decode it.

    Covers a body that is not UTF-8, not JSON, or nested too deeply for the JSON decoder; the
    answer names the problem ("the server's answer is not valid JSON (...)"). ``None`` otherwise.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, UnicodeDecodeError):
            return "the server's answer is not valid UTF-8"
        if isinstance(current, json.JSONDecodeError):
            where = f"{current.msg} at position {current.pos}"
            return f"the server's answer is not valid JSON ({where})"
        if isinstance(current, RecursionError):
            return "the server's answer is nested too deeply to read"
        current = current.__cause__ or current.__context__
    return None


# -- the deadline ----------------------------------------------------------------------------------


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Bound every socket operation of memreader's transports in this block to ``seconds``.

    Nested blocks keep the earlier deadline. Yields the deadline as a ``time.monotonic()`` value.
    Works in threads and asyncio tasks alike (it is a context variable).
    """
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    if outer is not None and outer < end:
        end = outer
    token = _DEADLINE.set(end)
    try:
        yield end
    finally:
        _DEADLINE.reset(token)


def time_left() -> float | None:
    """Seconds left before the current deadline (may be negative), or ``None`` if none is set."""
    end = _DEADLINE.get()
    return None if end is None else end - time.monotonic()


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` shortened to the time left; raises ``expired`` once none is left."""
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        raise expired("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


# -- network backends (the seam) ------------------------------------------------------------------


class _DeadlineStream:
    """A network stream whose reads and writes never outlast the current deadline."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner = inner
        self._core = core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, _bounded(timeout, self._core.ReadTimeout))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _DeadlineStream:
        bounded = _bounded(timeout, self._core.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, bounded), self._core
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncDeadlineStream:
    """The async twin of :class:`_DeadlineStream`."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner = inner
        self._core = core

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = await self._inner.read(max_bytes, _bounded(timeout, self._core.ReadTimeout))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _bounded(timeout, self._core.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _AsyncDeadlineStream:
        bounded = _bounded(timeout, self._core.ConnectTimeout)
        stream = await self._inner.start_tls(ssl_context, server_hostname, bounded)
        return _AsyncDeadlineStream(stream, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend:
    """An httpcore network backend that bounds every operation by the current deadline.

    Args:
        inner: the backend doing the I/O (httpcore's ``SyncBackend``).
        core: the httpcore module whose timeout errors to raise (``httpcore`` or ``httpcore2``).
    """

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner = inner
        self._core = core

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> _DeadlineStream:
        """Connect within the time left."""
        stream = self._inner.connect_tcp(
            host,
            port,
            timeout=_bounded(timeout, self._core.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._core)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> _DeadlineStream:
        """Connect within the time left."""
        stream = self._inner.connect_unix_socket(
            path,
            timeout=_bounded(timeout, self._core.ConnectTimeout),
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._core)

    def sleep(self, seconds: float) -> None:
        """Sleep (httpcore's connect retries), never past the deadline."""
        left = time_left()
        self._inner.sleep(seconds if left is None else max(0.0, min(seconds, left)))


class AsyncDeadlineBackend:
    """The async twin of :class:`DeadlineBackend` (``inner``: httpcore's ``AnyIOBackend``)."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner = inner
        self._core = core

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> _AsyncDeadlineStream:
        """Connect within the time left."""
        stream = await self._inner.connect_tcp(
            host,
            port,
            timeout=_bounded(timeout, self._core.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _AsyncDeadlineStream(stream, self._core)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> _AsyncDeadlineStream:
        """Connect within the time left."""
        stream = await self._inner.connect_unix_socket(
            path,
            timeout=_bounded(timeout, self._core.ConnectTimeout),
            socket_options=socket_options,
        )
        return _AsyncDeadlineStream(stream, self._core)

    async def sleep(self, seconds: float) -> None:
        """Sleep (httpcore's connect retries), never past the deadline."""
        left = time_left()
        await self._inner.sleep(seconds if left is None else max(0.0, min(seconds, left)))


# -- the two HTTP libraries -----------------------------------------------------------------------


@dataclass(frozen=True)
class HTTPLib:
    """An httpx-like library and the httpcore-like library under it."""

    name: str
    httpx: Any
    httpcore: Any


@cache
def http_lib(name: str = "httpx") -> HTTPLib:
    """``"httpx"`` (over httpcore) or ``"httpx2"`` (over httpcore2)."""
    core = {"httpx": "httpcore", "httpx2": "httpcore2"}.get(name)
    if core is None:
        raise ValueError(f"unknown HTTP library {name!r}; expected 'httpx' or 'httpx2'")
    return HTTPLib(name, importlib.import_module(name), importlib.import_module(core))


def openai_http_lib(openai_module: Any) -> HTTPLib:
    """The library the installed openai SDK is built on (httpx2 from openai 3, else httpx)."""
    client_class = getattr(openai_module, "DefaultHttpxClient", None)
    with contextlib.suppress(ImportError):
        lib = http_lib("httpx2")
        if isinstance(client_class, type) and issubclass(client_class, lib.httpx.Client):
            return lib
    return http_lib("httpx")


@contextlib.contextmanager
def _mapped_errors(lib: HTTPLib) -> Iterator[None]:
    """httpcore errors as the httpx errors of the same name (what httpx's transport does)."""
    try:
        yield
    except Exception as exc:
        for cls in type(exc).__mro__:
            package = cls.__module__.partition(".")[0]
            if package == lib.httpcore.__name__ and hasattr(lib.httpx, cls.__name__):
                raise getattr(lib.httpx, cls.__name__)(str(exc)) from exc
        raise


def _bound_request_timeouts(request: Any, end: float) -> None:
    """Shorten the request's own timeouts (connect, read, write, pool) to the time left."""
    left = max(0.0, end - time.monotonic())
    timeouts = dict(request.extensions.get("timeout") or {})
    for key in _TIMEOUT_KEYS:
        value = timeouts.get(key)
        timeouts[key] = left if value is None else min(float(value), left)
    request.extensions["timeout"] = timeouts


class _Body:
    """A response body read under the request's deadline and cut at the size cap."""

    def __init__(self, inner: Any, lib: HTTPLib, end: float, limit: int | None) -> None:
        self._inner = inner
        self._lib = lib
        self._end = end
        self._limit = limit

    def _count(self, received: int) -> None:
        if self._limit is not None and received > self._limit:
            raise ResponseTooLargeError(self._limit)

    def _check(self) -> None:
        if time.monotonic() >= self._end:
            raise self._lib.httpx.ReadTimeout("the request's deadline has passed")

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        chunks = iter(self._inner)
        while True:
            # The deadline is re-entered per chunk: the body is read after handle_request
            # has returned, outside the block that set it.
            token = _DEADLINE.set(self._end)
            try:
                self._check()
                with _mapped_errors(self._lib):
                    chunk = next(chunks, None)
            finally:
                _DEADLINE.reset(token)
            if chunk is None:
                return
            received += len(chunk)
            self._count(received)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        chunks = self._inner.__aiter__()
        while True:
            token = _DEADLINE.set(self._end)
            try:
                self._check()
                with _mapped_errors(self._lib):
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        return
            finally:
                _DEADLINE.reset(token)
            received += len(chunk)
            self._count(received)
            yield chunk

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()


class _Transport:
    """The deadline transport, sync and async (see :func:`deadline_transport`)."""

    def __init__(
        self,
        lib: HTTPLib,
        *,
        asynchronous: bool,
        timeout: float,
        max_response_bytes: int | None,
        inner: Any = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._lib = lib
        self._timeout = timeout
        self._limit = max_response_bytes
        self._inner = inner
        self._body_class = _body_class(lib, asynchronous)
        self._pool: Any = None
        if inner is None:
            core = lib.httpcore
            pool_class = core.AsyncConnectionPool if asynchronous else core.ConnectionPool
            backend = (
                AsyncDeadlineBackend(core.AnyIOBackend(), core)
                if asynchronous
                else DeadlineBackend(core.SyncBackend(), core)
            )
            self._pool = pool_class(
                ssl_context=lib.httpx.create_ssl_context(),
                max_connections=100,
                max_keepalive_connections=20,
                keepalive_expiry=5.0,
                network_backend=backend,
            )

    def _begin(self, request: Any) -> float:
        end = time.monotonic() + self._timeout
        outer = _DEADLINE.get()
        if outer is not None and outer < end:
            end = outer
        _bound_request_timeouts(request, end)
        return end

    def _core_request(self, request: Any) -> Any:
        core = self._lib.httpcore
        url = request.url
        return core.Request(
            method=request.method,
            url=core.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )

    def _response(self, response: Any, end: float) -> Any:
        body = self._body_class(response.stream, self._lib, end, self._limit)
        if self._inner is not None:
            response.stream = body
            return response
        return self._lib.httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=body,
            extensions=response.extensions,
        )

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` under its deadline (httpx ``BaseTransport`` interface)."""
        end = self._begin(request)
        token = _DEADLINE.set(end)
        try:
            if self._inner is not None:
                response = self._inner.handle_request(request)
            else:
                with _mapped_errors(self._lib):
                    response = self._pool.handle_request(self._core_request(request))
        finally:
            _DEADLINE.reset(token)
        return self._response(response, end)

    async def handle_async_request(self, request: Any) -> Any:
        """Send ``request`` under its deadline (httpx ``AsyncBaseTransport`` interface)."""
        end = self._begin(request)
        token = _DEADLINE.set(end)
        try:
            if self._inner is not None:
                response = await self._inner.handle_async_request(request)
            else:
                with _mapped_errors(self._lib):
                    response = await self._pool.handle_async_request(self._core_request(request))
        finally:
            _DEADLINE.reset(token)
        return self._response(response, end)

    def close(self) -> None:
        """Close the connections."""
        target = self._inner if self._inner is not None else self._pool
        target.close()

    async def aclose(self) -> None:
        """Close the connections (async)."""
        target = self._inner if self._inner is not None else self._pool
        await target.aclose()

    def __enter__(self) -> _Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> _Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@cache
def _body_class(lib: HTTPLib, asynchronous: bool) -> type[_Body]:
    # httpx checks that a response stream is one of its own byte-stream types.
    base = lib.httpx.AsyncByteStream if asynchronous else lib.httpx.SyncByteStream
    return type(f"{lib.name}{'Async' if asynchronous else ''}DeadlineBody", (_Body, base), {})


@cache
def _transport_class(lib: HTTPLib, asynchronous: bool) -> type[_Transport]:
    base = lib.httpx.AsyncBaseTransport if asynchronous else lib.httpx.BaseTransport
    name = f"{lib.name}{'Async' if asynchronous else ''}DeadlineTransport"
    return type(name, (_Transport, base), {})


def deadline_transport(
    lib: HTTPLib,
    *,
    timeout: float,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    asynchronous: bool = False,
    inner: Any = None,
) -> Any:
    """An httpx(2) transport that ends every request within ``timeout`` seconds.

    Args:
        lib: the HTTP library (:func:`http_lib`).
        timeout: the deadline of one request (connect, send, headers and body), unless an
            enclosing :func:`deadline` block ends earlier.
        max_response_bytes: the most body bytes read (``None``: no cap); more raise
            :class:`ResponseTooLargeError`.
        asynchronous: build an ``AsyncBaseTransport`` instead of a ``BaseTransport``.
        inner: a transport to wrap instead of memreader's own connection pool. The deadline
            is then only checked between body chunks (each read is bounded by ``inner``'s own
            timeouts), the size cap still applies.
    """
    cls = _transport_class(lib, asynchronous)
    return cls(
        lib,
        asynchronous=asynchronous,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        inner=inner,
    )


def http_client(
    lib: HTTPLib,
    *,
    timeout: float,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    asynchronous: bool = False,
    credentials: tuple[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """An httpx(2) ``Client``/``AsyncClient`` over a :func:`deadline_transport`.

    ``credentials`` (from :func:`split_credentials`) are sent as HTTP basic auth; other keyword
    arguments go to the client. Redirects are followed, as the SDKs' own clients do.
    """
    install_log_redaction()
    transport = deadline_transport(
        lib, timeout=timeout, max_response_bytes=max_response_bytes, asynchronous=asynchronous
    )
    kwargs.setdefault("follow_redirects", True)
    if credentials is not None:
        kwargs["auth"] = lib.httpx.BasicAuth(*credentials)
    client_class = lib.httpx.AsyncClient if asynchronous else lib.httpx.Client
    return client_class(transport=transport, timeout=timeout, **kwargs)


# -- credentials in URLs and logs ----------------------------------------------------------------


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part (percent-decoded) if any."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return bare, (unquote(parts.username or ""), unquote(parts.password or ""))


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]+@")


def redact_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL in it replaced by ``***@``."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


class _RedactCredentials(logging.Filter):
    """Masks URL credentials in a library's log records (its request lines show URLs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report, not ours
            return True
        redacted = redact_credentials(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_FILTER = _RedactCredentials()
#: Loggers on which the HTTP libraries and SDKs log request lines (filters do not inherit).
_REDACTED_LOGGERS = ("httpx", "httpx2", "openai._base_client", "ollama")


def install_log_redaction() -> None:
    """Add the URL-credential filter to the HTTP libraries' loggers (idempotent)."""
    for name in _REDACTED_LOGGERS:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)
