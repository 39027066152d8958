"""Counting work instead of timing it: a test of "this is linear" or "this is refused without
expanding" counts what was done (lines of Python executed, bytes inflated, items read, calls
made), which does not depend on how loaded the machine is. No test asserts a wall-clock time
(``tests/test_no_wall_clock_asserts.py`` keeps it so)."""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

__all__ = [
    "CountingList",
    "CountingPattern",
    "Inflated",
    "assert_linear",
    "inflated_bytes",
    "lines_executed",
]


def lines_executed(call: Callable[[], Any], *modules: Any) -> int:
    """How many lines of Python running ``call()`` executed (only those in the files of
    ``modules`` when given): a count of work that grows with what the code does, not with the
    machine's load."""
    files = {str(Path(m.__file__).resolve()) for m in modules}
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if not files or str(Path(frame.f_code.co_filename).resolve()) in files:
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(previous)
    return count


def assert_linear(counts: dict[int, int], slack: float = 1.25) -> None:
    """``counts`` maps a size to the work done at that size: the work per unit of size at the
    largest size is at most ``slack`` times that at the smallest (quadratic work doubles it
    at every doubling of the size)."""
    sizes = sorted(counts)
    small, large = sizes[0], sizes[-1]
    assert large >= 4 * small, "compare sizes at least four times apart"
    per_small, per_large = counts[small] / small, counts[large] / large
    assert per_large <= slack * per_small, f"work per unit grew: {counts}"


class CountingList(list[Any]):
    """A list that counts how many of its items were read (``bisect`` reads them one by one
    through ``__getitem__``, so this counts its comparisons)."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        return super().__getitem__(index)


class CountingPattern:
    """A compiled regular expression that counts the characters its calls were given (the
    regex engine's work happens in C, where no line of Python is counted)."""

    def __init__(self, pattern: Any) -> None:
        self._pattern = pattern
        self.scanned = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._pattern, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.scanned += sum(len(a) for a in args if isinstance(a, str))
            return method(*args, **kwargs)

        return counted


@dataclass
class Inflated:
    """Bytes out of zlib while :func:`inflated_bytes` was active."""

    bytes: int = 0


class _CountingInflater:
    def __init__(self, inner: Any, counter: Inflated) -> None:
        self._inner, self._counter = inner, counter

    def decompress(self, data: bytes, *args: Any) -> bytes:
        out: bytes = self._inner.decompress(data, *args)
        self._counter.bytes += len(out)
        return out

    def flush(self, *args: Any) -> bytes:
        out: bytes = self._inner.flush(*args)
        self._counter.bytes += len(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextmanager
def inflated_bytes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Inflated]:
    """Count the bytes every ``zlib.decompressobj`` and ``zlib.decompress`` made (the zip
    archives, PDF streams and PNGs that code under test inflates through the ``zlib`` module):
    a bomb refused without expanding it inflates little, one expanded inflates all of it."""
    counter = Inflated()
    real_object, real_decompress = zlib.decompressobj, zlib.decompress

    def decompressobj(*args: Any, **kwargs: Any) -> Any:
        return _CountingInflater(real_object(*args, **kwargs), counter)

    def decompress(data: bytes, *args: Any, **kwargs: Any) -> bytes:
        out = real_decompress(data, *args, **kwargs)
        counter.bytes += len(out)
        return out

    with monkeypatch.context() as patch:
        patch.setattr(zlib, "decompressobj", decompressobj)
        patch.setattr(zlib, "decompress", decompress)
        yield counter
