"""The deadline of a request, and the httpcore network backends that enforce it on every socket
operation (see :mod:`memreader.transport` for why this is the seam)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = [
    "AsyncDeadlineBackend",
    "DeadlineBackend",
    "current_deadline",
    "deadline",
    "deadline_at",
    "end_after",
    "time_left",
]

# The monotonic time by which the current request must be done; None: no deadline.
_DEADLINE: ContextVar[float | None] = ContextVar("memreader_http_deadline", default=None)


def end_after(seconds: float) -> float:
    """The ``time.monotonic()`` value ``seconds`` from now, or the enclosing deadline if earlier."""
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    return end if outer is None or outer >= end else outer


@contextlib.contextmanager
def deadline_at(end: float) -> Iterator[float]:
    """Make ``end`` (a ``time.monotonic()`` value) the deadline of this block, as it is."""
    token = _DEADLINE.set(end)
    try:
        yield end
    finally:
        _DEADLINE.reset(token)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Bound every socket operation of memreader's transports in this block to ``seconds``.

    Nested blocks keep the earlier deadline. Yields the deadline as a ``time.monotonic()`` value.
    Works in threads and asyncio tasks alike (it is a context variable).
    """
    with deadline_at(end_after(seconds)) as end:
        yield end


def current_deadline() -> float | None:
    """The ``time.monotonic()`` value of the enclosing deadline, or ``None`` outside one."""
    return _DEADLINE.get()


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
