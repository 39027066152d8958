"""Where a batch job's inputs are: the base of the storages (a local file system, an S3
bucket) that find a spec's inputs and open their bytes, and the reference to one input."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec

__all__ = ["CHUNK", "InputRef", "InputStorage", "Read"]

#: Bytes read at a time, locally and from S3: the most a read holds beyond the current line.
CHUNK = 1024 * 1024

#: ``read(size)``: up to ``size`` bytes of an input, ``b""`` at its end.
Read = Callable[[int], bytes]


@dataclass(frozen=True)
class InputRef:
    """One input found by discovery.

    ``key`` is the manifest's stable id: the path relative to ``job.base_dir`` (``/``-separated)
    when under it, else absolute; ``s3://bucket/key`` for S3. ``location`` is what is opened:
    an absolute local path or the ``s3://`` URL. ``size`` is what the listing reported.
    """

    key: str
    spec_index: int
    location: str
    size: int | None


class InputStorage(ABC):
    """Finds inputs and opens their bytes, for one kind of location."""

    @abstractmethod
    def discover(self, index: int, spec: InputSpec) -> list[InputRef]:
        """The inputs ``spec`` (``inputs.<index>``) names, sorted, without the job's own
        output files.

        Raises:
            InputError: nothing matches (named: ``inputs.2: no file matches 'x/*.json'``).
        """

    @abstractmethod
    def open(self, ref: InputRef) -> AbstractContextManager[Read]:
        """A :data:`Read` over the bytes of ``ref``, closed on exit."""

    def read_whole(self, ref: InputRef, max_bytes: int) -> bytes:
        """All of ``ref``, refused past ``max_bytes`` (read at most one byte further)."""
        chunks = []
        left = max_bytes + 1
        with self.open(ref) as read:
            while left > 0 and (chunk := read(min(left, CHUNK))):
                chunks.append(chunk)
                left -= len(chunk)
        if left <= 0:
            raise InputError(f"{ref.key}: over the limit of {max_bytes} bytes")
        return b"".join(chunks)

    def close(self) -> None:  # noqa: B027 - optional override
        """Close the clients opened here (none by default)."""
