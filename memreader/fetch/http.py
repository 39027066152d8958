"""Reading ``http(s)`` URLs for :class:`~memreader.fetch.fetcher.Fetcher`.

A URL is the widest way in of all the references a part can make: it can point at the cloud
metadata service or an internal host (SSRF), redirect there, never end, trickle, or be larger
than promised, and a presigned URL carries its signature in the query. :class:`HTTPReader`
meets each of those on its own path, apart from S3, local files and data URLs:

* **a deadline per attempt**: requests go through memreader's deadline transport, one
  ``timeout_s`` deadline from connect to last byte, checked on every socket read, so a
  trickling server cannot hold a download open;
* **redirects followed here, each hop checked**: the transport is driven without an httpx
  ``Client`` (no ``trust_env``, so no proxy from the environment; no redirect followed behind
  this loop's back; no request log line quoting the query). Every hop's scheme and host are
  checked before connecting, at most ``max_redirects`` are followed, and credentials from the
  URL go only to the origin they were given for;
* **the guard at connect time**: every connection is made through
  :class:`~memreader.transport.guard.GuardedBackend` (resolve, check every address, connect to
  a checked one, check the peer), so a name that resolves to a private address is refused
  where it is used, not only where it is read. An injected transport owns its sockets: the
  hop checks still apply, the connect-time guard does not;
* **retries**: connection errors, timeouts, 408, 429 and 5xx are retried with backoff and
  jitter (``Retry-After`` honoured, capped at ten seconds); each retry is reported
  to the caller's counter. Final failures are worded by their kind and exception type, never a
  library message that may quote the URL.

The size limit is checked against ``Content-Length`` and again while streaming; the content
type must fit the part (:func:`~memreader.fetch.media_types.check_content_type`) unless the
host is a direct-Markdown host, whose text must be UTF-8.

:class:`HTTPReader` does no slot accounting and builds no
:class:`~memreader.fetch.fetcher.Fetched`: the Fetcher does both, so this module never
imports it.
"""

from __future__ import annotations

import base64
import functools
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from memreader._version import __version__
from memreader.errors import BlockedAddressError, FetchError
from memreader.fetch.media_types import (
    FetchKind,
    check_content_type,
    disposition_name,
    media_type_of,
    safe_label,
)
from memreader.fetch.settings import FetchConfig
from memreader.transport import (
    RetryPolicy,
    classify,
    deadline_transport,
    http_lib,
    split_credentials,
)
from memreader.transport.failures import Failure, parse_retry_after
from memreader.transport.guard import AddressPolicy, GuardedBackend, Resolver

__all__ = ["HTTPReader", "HTTPResource"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: 4xx answers worth another request; every 5xx is too.
_RETRY_STATUSES = frozenset({408, 429})
#: The longest wait between attempts, ``Retry-After`` included.
_BACKOFF_MAX_S = 10.0


@dataclass(frozen=True)
class HTTPResource:
    """What a URL answered, after its redirects.

    Attributes:
        data: the bytes.
        label: the final hop's URL without userinfo, query and fragment.
        name: the name hint, else the ``Content-Disposition`` file name, else the path's base
            name.
        media_type: the response's ``Content-Type`` without parameters (``None`` if unset).
        markdown: the first host is in ``direct_markdown_hostnames`` (the text is Markdown,
            UTF-8 checked).
    """

    data: bytes
    label: str
    name: str
    media_type: str | None
    markdown: bool


class _StatusError(Exception):
    """An HTTP error answer, raised inside an attempt so the retry policy sees it."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class _Redirect:
    location: str


@dataclass(frozen=True)
class _Body:
    data: bytes
    name: str
    media_type: str | None


class HTTPReader:
    """Gets ``http(s)`` URLs with every check of the module, through one transport built once.

    Args:
        config: how downloads are made (``timeout_s``, ``max_retries``, ``backoff_base_s``,
            ``max_redirects``, ``allowed_schemes``, ``allow_hosts``,
            ``direct_markdown_hostnames``; ``allowed_content_types`` for documents).
        transport: an httpx transport to use instead of the network (see the module: the hop
            checks still apply, the connect-time guard does not).
        resolve: the host resolver of the address check (a seam for tests).
        on_retries: called with ``1`` before each retry's wait.

    Thread-safe.
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        transport: Any = None,
        resolve: Resolver | None = None,
        on_retries: Callable[[int], None] | None = None,
    ) -> None:
        self._config = config
        self._transport = transport
        self._resolve = resolve
        self._on_retries = on_retries
        self._policy = AddressPolicy(config.allow_hosts)
        self._markdown_hosts = frozenset(config.direct_markdown_hostnames)
        self._lock = threading.Lock()
        self._client: Any = None  # the deadline transport, built on first use
        self._retry = RetryPolicy(
            max_retries=config.max_retries,
            backoff_base=config.backoff_base_s,
            backoff_max=_BACKOFF_MAX_S,
            sleep=self._backoff,
        )

    def get(self, url: str, kind: FetchKind, limit: int, hint: str) -> HTTPResource:
        """``url``'s body, its redirects followed and each hop checked, retried while transient.

        Raises:
            BlockedAddressError: a hop's scheme is not allowed, or its host or an address it
                resolves to is not public.
            FetchError: not a valid URL, an error status, a timeout, a failed connection, too
                many redirects, a content type that does not fit ``kind``, a body over
                ``limit`` bytes, or non-UTF-8 text from a Markdown host.
        """
        try:
            current, credentials = split_credentials(url.strip())
        except ValueError:
            raise FetchError(f"{safe_label(url)}: not a valid URL") from None
        first = urlsplit(current)
        origin = (first.scheme.lower(), first.hostname, first.port)
        markdown = kind == "document" and (first.hostname or "") in self._markdown_hosts
        for _ in range(self._config.max_redirects + 1):
            label = safe_label(current)
            parts = self._check_hop(current, label)
            # Credentials go only to the origin they were given for, never to a redirect target.
            same = (parts.scheme.lower(), parts.hostname, parts.port) == origin
            attempt = functools.partial(
                self._attempt, current, credentials if same else None, kind, limit, hint, markdown
            )
            outcome = self._retry.run(
                attempt,
                self._classify,
                functools.partial(self._give_up, label),
                label=label,
                passthrough=(FetchError,),
            )
            if isinstance(outcome, _Redirect):
                current = outcome.location
                continue
            if markdown:
                try:
                    outcome.data.decode("utf-8")
                except UnicodeDecodeError:
                    raise FetchError(
                        f"{label}: a Markdown host sent text that is not UTF-8"
                    ) from None
            return HTTPResource(outcome.data, label, outcome.name, outcome.media_type, markdown)
        raise FetchError(
            f"{safe_label(url)}: more than {self._config.max_redirects} redirects (max_redirects)"
        )

    def close(self) -> None:
        """Close the transport's connections (a later get reopens)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _check_hop(self, url: str, label: str) -> Any:
        """Refuse a hop before connecting: its scheme, and a host that is plainly not public."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
            parts.port  # noqa: B018 - validates the port
        except ValueError:
            raise FetchError(f"{label}: not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or scheme not in self._config.allowed_schemes:
            raise BlockedAddressError(f"{label}: the {scheme!r} scheme is not allowed")
        if not host:
            raise FetchError(f"{label}: the URL has no host")
        self._policy.check_host(host, label)
        return parts

    def _attempt(
        self,
        url: str,
        credentials: tuple[str, str] | None,
        kind: FetchKind,
        limit: int,
        hint: str,
        markdown: bool,
    ) -> _Redirect | _Body:
        """One request; an error status raises :class:`_StatusError` for the retry policy.

        The transport is driven directly, without an httpx ``Client``: no proxy can come from
        the environment (``trust_env`` is a client feature), redirects are not followed behind
        this loop's back, and no request log line shows the URL's query.
        """
        httpx = http_lib().httpx
        headers = {"User-Agent": _user_agent(), "Accept": "*/*"}
        if credentials is not None:
            token = base64.b64encode(":".join(credentials).encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        request = httpx.Request("GET", url, headers=headers)
        response = self._http_transport().handle_request(request)
        response.request = request
        try:
            label = safe_label(url)
            status = response.status_code
            if status in _REDIRECTS:
                location = response.headers.get("location")
                if not location:
                    raise FetchError(f"{label}: HTTP {status} without a Location")
                return _Redirect(str(response.url.join(location)))
            if status >= 400:
                raise _StatusError(status, parse_retry_after(response.headers))
            if not 200 <= status < 300:
                raise FetchError(f"{label}: unexpected HTTP {status}")
            media_type = media_type_of(response.headers.get("content-type"))
            name = (
                hint or disposition_name(response.headers) or posixpath.basename(response.url.path)
            )
            if not markdown:
                check_content_type(kind, media_type, name, label, self._config)
            length = response.headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise FetchError(f"{label}: {length} bytes, over the limit of {limit} bytes")
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > limit:
                    raise FetchError(f"{label}: the body is over the limit of {limit} bytes")
                chunks.append(chunk)
            return _Body(b"".join(chunks), name, media_type)
        finally:
            response.close()

    def _http_transport(self) -> Any:
        """memreader's deadline transport over the address guard, built once."""
        with self._lock:
            if self._client is None:
                lib = http_lib()
                backend = None
                if self._transport is None:
                    core = lib.httpcore
                    backend = GuardedBackend(core.SyncBackend(), core, self._policy, self._resolve)
                self._client = deadline_transport(
                    lib,
                    timeout=self._config.timeout_s,
                    max_response_bytes=None,  # per call, enforced while streaming
                    inner=self._transport,
                    network_backend=backend,
                )
            return self._client

    def _classify(self, exc: Exception) -> Failure:
        if isinstance(exc, _StatusError):
            retryable = exc.status in _RETRY_STATUSES or exc.status >= 500
            return Failure(
                "status", str(exc), retryable, status_code=exc.status, retry_after=exc.retry_after
            )
        failure = classify(exc)
        # Only the exception's type: library messages may quote the URL.
        return replace(failure, detail=type(exc).__name__)

    def _give_up(self, label: str, failure: Failure) -> FetchError:
        if failure.kind == "status":
            return FetchError(f"{label}: HTTP {failure.status_code}")
        if failure.kind == "timeout":
            return FetchError(
                f"{label}: no complete answer within {self._config.timeout_s:g}s ({failure.detail})"
            )
        if failure.kind == "connection":
            return FetchError(f"{label}: connection failed ({failure.detail})")
        return FetchError(f"{label}: download failed ({failure.detail})")

    def _backoff(self, seconds: float) -> None:
        if self._on_retries is not None:
            self._on_retries(1)
        time.sleep(seconds)


@functools.cache
def _user_agent() -> str:
    return f"memreader/{__version__}"
