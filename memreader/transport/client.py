"""The deadline transport (httpx ``BaseTransport``/``AsyncBaseTransport``) and the clients built on
it (see :mod:`memreader.transport` for why)."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

from memreader.transport.body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseBody,
    accept_encoding,
    content_codings,
)
from memreader.transport.credentials import install_log_redaction
from memreader.transport.deadline import (
    AsyncDeadlineBackend,
    DeadlineBackend,
    current_deadline,
    deadline_at,
    end_after,
)
from memreader.transport.libs import HTTPLib, mapped_errors

__all__ = ["check_transport", "deadline_transport", "http_client"]

_TIMEOUT_KEYS = ("connect", "read", "write", "pool")
#: What a transport answers requests with (httpx's ``BaseTransport``/``AsyncBaseTransport``).
_TRANSPORT_METHODS = ("handle_request", "handle_async_request")


def check_transport(value: Any) -> Any:
    """``value`` if it can stand in for the network (``None``, or an object with httpx's
    ``handle_request`` or ``handle_async_request``); raises ``ValueError`` otherwise, for config
    validators."""
    if value is not None and not any(
        callable(getattr(value, name, None)) for name in _TRANSPORT_METHODS
    ):
        raise ValueError(
            "transport must be an httpx-style transport (with handle_request or "
            f"handle_async_request), got {type(value).__name__}"
        )
    return value


def _bound_request_timeouts(request: Any, end: float) -> None:
    """Shorten the request's own timeouts (connect, read, write, pool) to the time left."""
    left = max(0.0, end - time.monotonic())
    timeouts = dict(request.extensions.get("timeout") or {})
    for key in _TIMEOUT_KEYS:
        value = timeouts.get(key)
        timeouts[key] = left if value is None else min(float(value), left)
    request.extensions["timeout"] = timeouts


class _Transport:
    """The deadline transport, sync and async (see :func:`deadline_transport`); mixed with
    httpx's ``BaseTransport`` or ``AsyncBaseTransport``, which give it ``with`` support."""

    def __init__(
        self,
        lib: HTTPLib,
        *,
        asynchronous: bool,
        timeout: float | None,
        max_response_bytes: int | None,
        inner: Any = None,
        network_backend: Any = None,
    ) -> None:
        if timeout is not None and timeout <= 0:
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
            if network_backend is None:
                network_backend = core.AnyIOBackend() if asynchronous else core.SyncBackend()
            backend = (
                AsyncDeadlineBackend(network_backend, core)
                if asynchronous
                else DeadlineBackend(network_backend, core)
            )
            self._pool = pool_class(
                ssl_context=_ssl_context(lib),
                max_connections=100,
                max_keepalive_connections=20,
                keepalive_expiry=5.0,
                network_backend=backend,
            )

    def _begin(self, request: Any) -> float:
        end = end_after(self._timeout) if self._timeout is not None else current_deadline()
        if end is None:
            # Without either bound a stalled server would hold the request forever.
            raise RuntimeError(
                "a deadline transport built with timeout=None must be used inside a "
                "memreader.transport.deadline() block"
            )
        _bound_request_timeouts(request, end)
        # Only codings ResponseBody can undo with a bound (httpx would inflate without one).
        request.headers["Accept-Encoding"] = accept_encoding(request.headers.get("Accept-Encoding"))
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
        if self._inner is not None:
            # A fresh response over the inner one's stream: one built from bytes has read them
            # already, and would hand them out past the cap without the stream being read.
            headers = list(response.headers.raw)
            status = response.status_code
        else:
            headers = list(response.headers)
            status = response.status
        codings = content_codings(headers)
        if codings:  # undone by the body: httpx must not undo them again
            drop = (b"content-encoding", b"content-length")
            headers = [(name, value) for name, value in headers if name.lower() not in drop]
        return self._lib.httpx.Response(
            status_code=status,
            headers=headers,
            stream=self._body_class(response.stream, self._lib, end, self._limit, codings),
            extensions=response.extensions,
        )

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` under its deadline (httpx ``BaseTransport`` interface)."""
        end = self._begin(request)
        with deadline_at(end):
            if self._inner is not None:
                response = self._inner.handle_request(request)
            else:
                with mapped_errors(self._lib):
                    response = self._pool.handle_request(self._core_request(request))
        return self._response(response, end)

    async def handle_async_request(self, request: Any) -> Any:
        """Send ``request`` under its deadline (httpx ``AsyncBaseTransport`` interface)."""
        end = self._begin(request)
        with deadline_at(end):
            if self._inner is not None:
                response = await self._inner.handle_async_request(request)
            else:
                with mapped_errors(self._lib):
                    response = await self._pool.handle_async_request(self._core_request(request))
        return self._response(response, end)

    def close(self) -> None:
        """Close the connections."""
        target = self._inner if self._inner is not None else self._pool
        target.close()

    async def aclose(self) -> None:
        """Close the connections (async)."""
        target = self._inner if self._inner is not None else self._pool
        await target.aclose()


@cache
def _ssl_context(lib: HTTPLib) -> Any:
    # Loading the CA bundle takes about 50 ms, and a client is built per event loop; an
    # SSLContext is meant to be shared by connections and threads, and nothing here changes it.
    return lib.httpx.create_ssl_context()


@cache
def _body_class(lib: HTTPLib, asynchronous: bool) -> type[ResponseBody]:
    # httpx checks that a response stream is one of its own byte-stream types.
    base = lib.httpx.AsyncByteStream if asynchronous else lib.httpx.SyncByteStream
    name = f"{lib.name}{'Async' if asynchronous else ''}DeadlineBody"
    return type(name, (ResponseBody, base), {})


@cache
def _transport_class(lib: HTTPLib, asynchronous: bool) -> type[_Transport]:
    base = lib.httpx.AsyncBaseTransport if asynchronous else lib.httpx.BaseTransport
    name = f"{lib.name}{'Async' if asynchronous else ''}DeadlineTransport"
    return type(name, (_Transport, base), {})


def deadline_transport(
    lib: HTTPLib,
    *,
    timeout: float | None,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    asynchronous: bool = False,
    inner: Any = None,
    network_backend: Any = None,
) -> Any:
    """An httpx(2) transport that ends every request within ``timeout`` seconds.

    Args:
        lib: the HTTP library (:func:`~memreader.transport.http_lib`).
        timeout: the deadline of one request (connect, send, headers and body), unless an
            enclosing :func:`~memreader.transport.deadline` block ends earlier. ``None``: no
            deadline of its own; every request must then be sent inside a
            :func:`~memreader.transport.deadline` block, which bounds it whole (redirects
            included), and one sent outside raises ``RuntimeError``.
        max_response_bytes: the most body bytes read, and the most decoded (``None``: no cap);
            more raise :class:`~memreader.transport.ResponseTooLargeError`.
        asynchronous: build an ``AsyncBaseTransport`` instead of a ``BaseTransport``.
        inner: a transport to wrap instead of memreader's own connection pool. The deadline
            is then only checked between body chunks (each read is bounded by ``inner``'s own
            timeouts); the size cap and the bounded decoding still apply.
        network_backend: the httpcore network backend doing the I/O under the deadline
            (default: httpcore's ``SyncBackend``, or ``AnyIOBackend`` when asynchronous), e.g.
            a :class:`~memreader.transport.guard.GuardedBackend` that checks the addresses
            connected to. Ignored with ``inner`` (which owns the network).

    Also installs the URL-credential log filter (:func:`install_log_redaction`).
    """
    install_log_redaction()
    cls = _transport_class(lib, asynchronous)
    return cls(
        lib,
        asynchronous=asynchronous,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        inner=inner,
        network_backend=network_backend,
    )


def http_client(
    lib: HTTPLib,
    *,
    timeout: float | None,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    asynchronous: bool = False,
    credentials: tuple[str, str] | None = None,
    inner: Any = None,
    network_backend: Any = None,
    **kwargs: Any,
) -> Any:
    """An httpx(2) ``Client``/``AsyncClient`` over a :func:`deadline_transport`.

    ``timeout`` is the transport's (see :func:`deadline_transport`); the client itself gets no
    timeout, since the deadline bounds every socket operation already. ``credentials`` (from
    :func:`~memreader.transport.split_credentials`) are sent as HTTP basic auth; ``inner``
    replaces the network and ``network_backend`` the socket layer under the deadline (see
    :func:`deadline_transport`); other keyword arguments go to the client. Redirects are
    followed, as the SDKs' own clients do.
    """
    transport = deadline_transport(
        lib,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        asynchronous=asynchronous,
        inner=inner,
        network_backend=network_backend,
    )
    kwargs.setdefault("follow_redirects", True)
    if credentials is not None:
        kwargs["auth"] = lib.httpx.BasicAuth(*credentials)
    client_class = lib.httpx.AsyncClient if asynchronous else lib.httpx.Client
    # timeout=None: no per-operation timeouts of httpx's own (its default is 5 s), only the
    # transport's deadline.
    return client_class(transport=transport, timeout=None, **kwargs)
