"""A response body read under its request's deadline, with its content coding undone in bounded
steps, and cut at a size cap counted both on the wire and after decoding.

httpx undoes ``Content-Encoding`` itself, after the transport, one whole network chunk at a time
and without a limit: a 300 KB gzip body that inflates to 300 MB is read whole into memory, and a
cap on the bytes received never sees it. So memreader's transport asks only for the codings it
can undo here (gzip and deflate, from the standard library's zlib), undoes them in steps of
:data:`DECODE_STEP` bytes while counting, and hands httpx a body without a coding. A reply in a
coding it did not ask for is refused (:class:`UnreadableResponseError`) rather than passed on.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from memreader.errors import MemReaderError
from memreader.transport.deadline import deadline_at
from memreader.transport.libs import HTTPLib, mapped_errors

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ResponseBody",
    "ResponseTooLargeError",
    "UnreadableResponseError",
    "accept_encoding",
    "content_codings",
    "unreadable_reply",
]

#: The default cap on a response body (32 MiB): far above any chat or embedding answer.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: The most bytes one decoding step produces.
DECODE_STEP = 64 * 1024

_ZLIB_WBITS = {
    "gzip": 16 + zlib.MAX_WBITS,
    "x-gzip": 16 + zlib.MAX_WBITS,
    "deflate": zlib.MAX_WBITS,
}
_ACCEPTED = ("gzip", "deflate")


class ResponseTooLargeError(MemReaderError):
    """A response body was larger than the configured ``max_response_bytes``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is larger than max_response_bytes ({limit} bytes)")
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.limit,)


class UnreadableResponseError(MemReaderError):
    """A response body could not be decoded: broken gzip/deflate data, or a coding not asked for."""


def unreadable_reply(exc: BaseException) -> str | None:
    """What was wrong with a reply, if ``exc`` (or what caused it) is a failure to decode it.

    Covers a body that is not UTF-8, not JSON, nested too deeply for the JSON decoder, or in a
    content coding that cannot be undone; the answer names the problem ("the server's answer is
    not valid JSON (...)"). ``None`` otherwise.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, UnreadableResponseError):
            return str(current)
        if isinstance(current, UnicodeDecodeError):
            return "the server's answer is not valid UTF-8"
        if isinstance(current, json.JSONDecodeError):
            where = f"{current.msg} at position {current.pos}"
            return f"the server's answer is not valid JSON ({where})"
        if isinstance(current, RecursionError):
            return "the server's answer is nested too deeply to read"
        current = current.__cause__ or current.__context__
    return None


def accept_encoding(requested: str | None) -> str:
    """The ``Accept-Encoding`` to send: the codings of ``requested`` that this module undoes.

    ``None`` (nothing requested) gives ``"gzip, deflate"``; a request for codings none of which
    can be undone here gives ``"identity"``.
    """
    if requested is None:
        return ", ".join(_ACCEPTED)
    kept = [
        item.strip()
        for item in requested.split(",")
        if item.partition(";")[0].strip().lower() in (*_ACCEPTED, "identity")
    ]
    return ", ".join(kept) or "identity"


def content_codings(raw_headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The codings a response's ``Content-Encoding`` lists, in the order they were applied."""
    codings: list[str] = []
    for name, value in raw_headers:
        if name.lower() == b"content-encoding":
            for item in value.decode("latin-1").split(","):
                coding = item.strip().lower()
                if coding and coding != "identity":
                    codings.append(coding)
    return codings


class _Inflater:
    """Undoes one gzip or deflate coding, ``DECODE_STEP`` bytes at a time."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._obj = zlib.decompressobj(_ZLIB_WBITS[coding])
        # "deflate" is meant to be zlib-wrapped, but some servers send raw deflate (as httpx,
        # try the other once if the first bytes do not fit).
        self._may_be_raw = coding == "deflate"

    def feed(self, pieces: Iterable[bytes]) -> Iterator[bytes]:
        for data in pieces:
            while True:
                try:
                    out = self._obj.decompress(data, DECODE_STEP)
                except zlib.error as exc:
                    if not self._may_be_raw:
                        raise self._broken(exc) from exc
                    self._may_be_raw = False
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                self._may_be_raw = False
                if out:
                    yield out
                data = self._obj.unconsumed_tail
                if not data and len(out) < DECODE_STEP:
                    break

    def flush(self) -> bytes:
        try:
            return self._obj.flush()
        except zlib.error as exc:  # pragma: no cover - flush after bounded steps rarely fails
            raise self._broken(exc) from exc

    def _broken(self, exc: zlib.error) -> UnreadableResponseError:
        return UnreadableResponseError(
            f"the server's answer is not valid {self._coding} data ({exc})"
        )


class _Decoder:
    """Undoes a response's content codings (the last applied first)."""

    def __init__(self, codings: Sequence[str]) -> None:
        unknown = [coding for coding in codings if coding not in _ZLIB_WBITS]
        if unknown:
            raise UnreadableResponseError(
                f"the server's answer is in a content coding that was not asked for "
                f"({', '.join(unknown)[:100]}); accepted: {', '.join(_ACCEPTED)}"
            )
        self._stages = [_Inflater(coding) for coding in reversed(codings)]

    def decode(self, data: bytes) -> Iterator[bytes]:
        pieces: Iterable[bytes] = (data,)
        for stage in self._stages:
            pieces = stage.feed(pieces)
        return iter(pieces)

    def flush(self) -> Iterator[bytes]:
        for i, stage in enumerate(self._stages):
            pieces: Iterable[bytes] = (stage.flush(),)
            for later in self._stages[i + 1 :]:
                pieces = later.feed(pieces)
            yield from (piece for piece in pieces if piece)


class ResponseBody:
    """A response body read under the request's deadline, decoded, and cut at the size cap.

    Args:
        inner: the raw byte stream (httpcore's, or an inner httpx transport's).
        lib: the HTTP library, whose errors a read raises.
        end: the ``time.monotonic()`` deadline of the request.
        limit: the most bytes read, and the most bytes decoded (``None``: no cap).
        codings: the response's content codings (:func:`content_codings`), undone here.
    """

    def __init__(
        self, inner: Any, lib: HTTPLib, end: float, limit: int | None, codings: Sequence[str]
    ) -> None:
        self._inner = inner
        self._lib = lib
        self._end = end
        self._limit = limit
        self._codings = list(codings)
        self._received = 0
        self._produced = 0

    def _raw(self, chunk: bytes) -> None:
        self._received += len(chunk)
        if self._limit is not None and self._received > self._limit:
            raise ResponseTooLargeError(self._limit)

    def _out(self, pieces: Iterable[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self._produced += len(piece)
            if self._limit is not None and self._produced > self._limit:
                raise ResponseTooLargeError(self._limit)
            yield piece

    def _expired(self) -> bool:
        return time.monotonic() >= self._end

    def _timeout(self) -> Exception:
        error: Exception = self._lib.httpx.ReadTimeout("the request's deadline has passed")
        return error

    def __iter__(self) -> Iterator[bytes]:
        decoder = _Decoder(self._codings) if self._codings else None
        chunks = iter(self._inner)
        while True:
            # The deadline is re-entered per chunk: the body is read after handle_request
            # has returned, outside the block that set it.
            with deadline_at(self._end):
                if self._expired():
                    raise self._timeout()
                with mapped_errors(self._lib):
                    chunk = next(chunks, None)
            if chunk is None:
                break
            self._raw(chunk)
            yield from self._out(decoder.decode(chunk) if decoder is not None else (chunk,))
        if decoder is not None:
            yield from self._out(decoder.flush())

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = _Decoder(self._codings) if self._codings else None
        chunks = self._inner.__aiter__()
        while True:
            with deadline_at(self._end):
                if self._expired():
                    raise self._timeout()
                with mapped_errors(self._lib):
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        break
            self._raw(chunk)
            for piece in self._out(decoder.decode(chunk) if decoder is not None else (chunk,)):
                yield piece
        if decoder is not None:
            for piece in self._out(decoder.flush()):
                yield piece

    def close(self) -> None:
        """Close the raw stream (sync)."""
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        """Close the raw stream (async)."""
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()
