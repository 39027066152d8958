"""A place that holds files: a local folder or an S3 prefix, each with a read side (a
:class:`FileSource`: the inputs a spec names, found and opened for their bytes) and a write side
(an :class:`OutputFolder`: files that appear whole or not at all), and what both need
(:class:`PlaceSettings`: the folder relative paths start from, S3's settings).

A file is written to a temporary file first and published under its final name
(:meth:`OutputFolder.publish`: an atomic rename locally, an upload on S3, after which the object
exists), so a job killed at any moment never leaves a half-written file.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memreader.errors import InputError, SinkError

if TYPE_CHECKING:
    from memreader.transport.s3 import S3Settings

__all__ = [
    "CHUNK",
    "FileSource",
    "InputRef",
    "OutputFolder",
    "PlaceSettings",
    "Read",
    "check_name",
    "os_problem",
    "remove_quietly",
    "text_type",
]

logger = logging.getLogger(__name__)

_TEXT_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")


@dataclass(frozen=True)
class PlaceSettings:
    """What every place needs: ``base_dir``, the folder relative local paths are relative to
    (the job file's; ``None``: the working directory), and ``s3``, the endpoint, region and
    profile for ``s3://`` places (credentials come from the usual AWS chain)."""

    base_dir: str | None
    s3: S3Settings


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
    within: str | None = None
    """The local folder the input must lie inside once symlinks are followed (its spec's
    ``within``), checked again when it is opened; ``None``: anywhere."""


class FileSource(ABC):
    """The read side of a place: finds inputs and opens their bytes."""

    @abstractmethod
    def discover(self, index: int, path: str, within: str | None, output: str) -> list[InputRef]:
        """The inputs ``path`` (the path of ``inputs.<index>``) names, sorted, without the files
        right in ``output`` (the job's output location: an absolute local folder or
        ``s3://bucket/prefix``); ``within``: the local folder they must lie inside (symlinks
        followed), or ``None``.

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


_TEXT_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")


class OutputFolder(ABC):
    """The write side of a place: files published whole under plain names (see the module
    docstring)."""

    @abstractmethod
    def location(self, name: str) -> str:
        """Where the file ``name`` is (a path or ``s3://bucket/key``)."""

    @abstractmethod
    def temp_dir(self) -> str:
        """The local folder temporary files for this folder are made in."""

    @abstractmethod
    def publish(self, temp: str, name: str, content_type: str) -> str:
        """Make the finished local file ``temp`` the file ``name`` (``temp`` is gone after);
        its location.

        Raises:
            SinkError: it could not be renamed or uploaded.
        """

    @abstractmethod
    def names_like(self, start: str) -> list[str]:
        """The names of the files here that start with ``start``.

        Raises:
            SinkError: the folder cannot be listed.
        """

    @abstractmethod
    def remove(self, name: str) -> None:
        """Remove the file ``name`` (nothing when it is gone already).

        Raises:
            SinkError: it cannot be removed.
        """

    @abstractmethod
    def write_text(self, name: str, text: str) -> str:
        """Write the small file ``name`` (a manifest, summary, errors), replacing it all at
        once; its location.

        Raises:
            ValueError: ``name`` is not a plain file name (``[A-Za-z0-9._-]``, no leading dot).
            SinkError: it cannot be written.
        """

    @abstractmethod
    def read_text(self, name: str) -> str | None:
        """The text of the file ``name``; ``None`` when it does not exist.

        Raises:
            ValueError: ``name`` is not a plain file name.
            SinkError: it exists but cannot be read.
        """

    def close(self) -> None:  # noqa: B027 - optional override
        """Close the clients opened here (none by default)."""

    def temp_file(self, name: str) -> str:
        """A new, empty temporary file for the future ``name`` (``.<name>.<12 hex>.tmp``, in
        :meth:`temp_dir`)."""
        folder = self.temp_dir()
        for _ in range(100):
            temp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
            try:
                # 0o666 less the umask, like any new file (mkstemp would make it 0o600).
                os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:  # pragma: no cover - 48 random bits
                continue
            except OSError as exc:
                raise SinkError(f"cannot write {self.location(name)}: {os_problem(exc)}") from None
            return temp
        raise SinkError(
            f"cannot write {self.location(name)}: no free temporary name"
        )  # pragma: no cover

    def remove_outputs(self, stem: str, keep: set[str]) -> None:
        """Remove the files of the input ``stem`` (``<stem>.<ext>``, ``<stem>-NNNNN.<ext>``,
        whatever the extension: any file sink's) that are not in ``keep``: left from an earlier
        run with more shards, unsharded, or in another format.

        Raises:
            SinkError: they cannot be listed or removed.
        """
        # The stem ends with 10 hex digits of the input's key: no other input's file matches.
        pattern = re.compile(rf"^{re.escape(stem)}(?:-\d{{5,}})?\.[A-Za-z0-9]{{1,16}}$")
        for name in self.names_like(stem):
            if pattern.match(name) and name not in keep:
                self.remove(name)


def check_name(name: str) -> None:
    """Refuse a name that is not a plain file name."""
    if not _TEXT_NAME.match(name) or name in (".", ".."):
        raise ValueError(f"{name!r} is not a plain file name ([A-Za-z0-9._-], no leading dot)")


def text_type(name: str) -> str:
    """The content type of the small text file ``name``."""
    if name.endswith(".json"):
        return "application/json; charset=utf-8"
    if name.endswith(".jsonl"):
        return "application/x-ndjson; charset=utf-8"
    return "text/plain; charset=utf-8"


def os_problem(exc: OSError) -> str:
    """An OS error in words (its ``strerror``)."""
    return exc.strerror or type(exc).__name__


def remove_quietly(path: str) -> None:
    """Remove the temporary file ``path``; a failure is logged, not raised."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        logger.warning("could not remove the temporary file %s", path)
