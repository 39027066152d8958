"""Sinks that write files: one output per input, optionally in shards of about
``output.shard_bytes``, in the job's output folder (a local folder or an S3 prefix). A file
sink only says how items are encoded (an :class:`Encoder`); where the files go and how they
appear whole is :class:`~memreader.batch.places.base.OutputFolder`'s.

Every output is written to a temporary file first and becomes visible only on
:meth:`FileInputWriter.commit`, so a job killed at any moment (SIGKILL included) never leaves a
half-written final file: a resumed job either finds an input's output whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from memreader.batch.places.base import OutputFolder, os_problem, remove_quietly
from memreader.batch.sinks.base import InputWriter, Sink, output_stem
from memreader.errors import SinkError

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec

__all__ = ["EncodedFile", "Encoder", "FileInputWriter", "FileSink"]

logger = logging.getLogger(__name__)


class EncodedFile(ABC):
    """One output file being written, at a temporary path."""

    @abstractmethod
    def write(self, entry: Any, line: bytes) -> None:
        """Write one item: ``entry`` is what :meth:`Encoder.prepare` made of it, ``line`` its
        JSON line (``\\n``-terminated UTF-8)."""

    @abstractmethod
    def finish(self) -> None:
        """Write what is buffered, close the file and fsync it (a power loss after the rename
        must not leave an empty final file). Raises ``OSError``."""

    @abstractmethod
    def abandon(self) -> None:
        """Close the file without finishing it (it is about to be removed); never raises."""


class Encoder(ABC):
    """How items become the bytes of one output file."""

    #: The files' extension, without the dot (``jsonl``).
    extension: ClassVar[str]
    #: Their content type (for S3).
    content_type: ClassVar[str]

    @classmethod  # noqa: B027 - optional override
    def check(cls) -> None:
        """Refuse to work without a library this encoder needs (none by default).

        Raises:
            ConfigError: naming the package to install.
        """

    def prepare(self, item: dict[str, Any], line: bytes) -> Any:
        """What :meth:`EncodedFile.write` takes for ``item`` (``line`` by default), made before
        the item is given a file, so an item that cannot be encoded leaves no trace.

        Raises:
            ValueError: why the item cannot be encoded (it is not written).
        """
        return line

    @abstractmethod
    def open(self, path: str) -> EncodedFile:
        """A new file at ``path`` (which exists, empty). Raises ``OSError``."""


class FileSink(Sink):
    """A sink that writes one file per input (or shards) with :attr:`encoder` (see the module
    docstring). A subclass sets ``encoder`` and is registered::

        @register_sink("csv")
        class CsvSink(FileSink):
            encoder = CsvEncoder
    """

    encoder: ClassVar[type[Encoder]]

    @classmethod
    def check(cls, spec: OutputSpec) -> None:
        """The encoder's own check (a missing library)."""
        cls.encoder.check()

    def open_input(self, key: str) -> FileInputWriter:
        """A writer for the output of the input ``key`` (named by :func:`output_stem`)."""
        return FileInputWriter(self.folder, self.encoder(), output_stem(key), self.spec.shard_bytes)


@dataclass
class _Shard:
    """One output file being written: its final name, its temporary file, its size so far."""

    name: str
    temp: str
    file: EncodedFile | None = None
    bytes: int = 0
    items: int = 0


class FileInputWriter(InputWriter):
    """The files of one input: ``<stem>.<ext>``, or with ``shard_bytes`` the shards
    ``<stem>-00000.<ext>``, ``<stem>-00001.<ext>``... in ``folder``."""

    def __init__(
        self, folder: OutputFolder, encoder: Encoder, stem: str, shard_bytes: int | None
    ) -> None:
        super().__init__()
        self._folder = folder
        self._encoder = encoder
        self._stem = stem
        self._shard_bytes = shard_bytes
        self._shards: list[_Shard] = []
        self._closed = False

    def write(self, item: dict[str, Any]) -> None:
        """Write one item, streamed to a temporary file; a new shard starts when this item
        would take the current one past ``shard_bytes`` (an item is never split, so a single
        larger item makes a larger shard).

        Raises:
            SinkError: the temporary file cannot be written, or the item is not JSON (``NaN``
                included) or cannot be encoded.
            ValueError: the writer was committed or discarded.
        """
        if self._closed:
            raise ValueError("this input's writer was already committed or discarded")
        try:
            line = (
                json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
            ).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SinkError(
                f"cannot write item {self.items} of {self._location()}: not JSON ({exc})"
            ) from None
        try:
            entry = self._encoder.prepare(item, line)
        except ValueError as exc:
            raise SinkError(
                f"cannot write item {self.items} of {self._location()}: {exc}"
            ) from None
        shard = self._shard_for(len(line))
        try:
            assert shard.file is not None
            shard.file.write(entry, line)
        except OSError as exc:
            raise SinkError(f"cannot write {self._location()}: {os_problem(exc)}") from None
        shard.bytes += len(line)
        shard.items += 1
        self.items += 1

    def commit(self) -> list[str]:
        """Make this input's output visible: each temporary file takes its final name (an atomic
        rename; on S3 an upload, after which the object exists), then files of this input left
        from an earlier, longer run (``<stem>-00003.jsonl``) or in another format are removed,
        so a rerun never leaves extra items. An input without items still gets one (empty)
        file, so its output says it was read.

        With several shards the files appear one after another, not all at once: a crash in
        the middle can leave some new shards beside old ones; the job's manifest (written after
        commit) is what says an input is done. A commit that fails after a shard appeared removes
        every file of this input (best effort), so a failed input leaves no half of itself.

        Returns:
            The final locations (paths or ``s3://`` URLs), in order.

        Raises:
            SinkError: a file could not be finished, renamed or uploaded, or stale files could
                not be removed; the temporary files are dropped (run the input again).
            ValueError: the writer was committed or discarded.
        """
        if self._closed:
            raise ValueError("this input's writer was already committed or discarded")
        locations: list[str] = []
        content_type = self._encoder.content_type
        try:
            if not self._shards:
                self._new_shard()
            self._finish(self._shards[-1])
            for shard in self._shards:
                locations.append(self._folder.publish(shard.temp, shard.name, content_type))
            self._folder.remove_outputs(self._stem, keep={shard.name for shard in self._shards})
        except BaseException:
            self.discard()
            if locations:
                self._unpublish()
            raise
        self._closed = True
        return locations

    def discard(self) -> None:
        """Drop the temporary files (and nothing else: committed files stay as they are)."""
        if self._closed:
            return
        self._closed = True
        for shard in self._shards:
            if shard.file is not None:
                _quietly(shard.file.abandon)
                shard.file = None
            remove_quietly(shard.temp)

    def _unpublish(self) -> None:
        """Remove every file of this input after a failed commit (logged when that fails too:
        the job's manifest still says the input failed, and a rerun replaces its files)."""
        try:
            self._folder.remove_outputs(self._stem, keep=set())
        except SinkError as exc:
            logger.warning("a failed commit left files of %s: %s", self._location(), exc)

    def _location(self) -> str:
        return self._folder.location(self._name(len(self._shards) - 1 if self._shards else 0))

    def _name(self, index: int) -> str:
        extension = self._encoder.extension
        if self._shard_bytes is None:
            return f"{self._stem}.{extension}"
        return f"{self._stem}-{index:05d}.{extension}"

    def _shard_for(self, size: int) -> _Shard:
        """The shard the next item of ``size`` bytes goes to (a new one when it would not fit)."""
        if not self._shards:
            return self._new_shard()
        shard = self._shards[-1]
        limit = self._shard_bytes
        if limit is not None and shard.items and shard.bytes + size > limit:
            self._finish(shard)
            return self._new_shard()
        return shard

    def _new_shard(self) -> _Shard:
        name = self._name(len(self._shards))
        shard = _Shard(name=name, temp=self._folder.temp_file(name))
        self._shards.append(shard)
        try:
            shard.file = self._encoder.open(shard.temp)
        except OSError as exc:
            raise SinkError(
                f"cannot write {self._folder.location(name)}: {os_problem(exc)}"
            ) from None
        return shard

    def _finish(self, shard: _Shard) -> None:
        """Finish ``shard``'s temporary file (see :meth:`EncodedFile.finish`)."""
        try:
            if shard.file is not None:
                shard.file.finish()
                shard.file = None
        except OSError as exc:
            raise SinkError(
                f"cannot write {self._folder.location(shard.name)}: {os_problem(exc)}"
            ) from None


def _quietly(close: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):
        close()
