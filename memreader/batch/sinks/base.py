"""The base of batch sinks: where a job's items go, one input at a time.

A sink is a class on :class:`Sink` registered by name (``@register_sink("store")``); a job
names it as ``output.format``, and :func:`build_sink` builds it over the job's output folder.
For each input the job opens an :class:`InputWriter`, writes the input's items into it and
commits it once the input is read, or discards it when the input fails: nothing of a
discarded input may remain visible. The job's own small files (manifest,
errors, summary) go to the sink's :attr:`Sink.folder`, whatever the sink does with items.

Sinks that write files (``jsonl``, ``parquet``) are
:class:`~memreader.batch.sinks.files.FileSink` subclasses: they only say how items are encoded.

>>> output_stem("chats/2024/a.jsonl")
'chats_2024_a.jsonl-e6ef668ac7'
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from memreader.batch.places import open_folder
from memreader.batch.registries import SINKS
from memreader.errors import ConfigError

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec
    from memreader.batch.places.base import OutputFolder
    from memreader.factory import MemReaderConfigFactory
    from memreader.readers import BaseMemReader
    from memreader.transport.s3 import S3Settings

__all__ = [
    "InputWriter",
    "Sink",
    "build_sink",
    "output_stem",
    "register_sink",
    "sink_class",
]

_S = TypeVar("_S", bound="type[Sink]")
_STEM_MAX = 100
_HASH_CHARS = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def register_sink(name: str) -> Callable[[_S], _S]:
    """Class decorator registering a sink (a subclass of :class:`Sink`) under ``name``;
    plugins call it from a module named in the ``memreader.plugins`` entry points.

    Raises:
        RegistryError: ``name`` is registered to a different class.
    """

    def decorator(cls: _S) -> _S:
        SINKS.register(name, cls)
        return cls

    return decorator


def sink_class(name: str) -> type[Sink]:
    """The sink class registered as ``name``.

    Raises:
        ConfigError: no sink of that name is known, or what is registered under it is not a
            :class:`Sink` subclass.
    """
    cls = SINKS.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Sink)):
        raise ConfigError(f"sink {name!r} is registered as {cls!r}, not a Sink class")
    return cls


def build_sink(
    spec: OutputSpec, *, s3: S3Settings, base_dir: str | None = None, s3_client: Any = None
) -> Sink:
    """The sink ``spec.format`` names, over the output folder ``spec.path``.

    Args:
        spec: the job's ``output``, its ``store`` (if any) as the sink opens it (a job's plan
            makes a relative SQLite file relative to the job file's folder, see
            :func:`~memreader.batch.plan.plan_job`).
        s3: the S3 endpoint, region and profile for an ``s3://`` folder (credentials come from
            the usual AWS chain).
        base_dir: the folder a relative ``spec.path`` is relative to (the job file's).
        s3_client: a boto3 S3 client to use instead of one built from ``s3``; never closed here.

    Raises:
        ConfigError: an unknown sink, one that cannot work here (``parquet`` without pyarrow),
            or a malformed ``s3://`` URL or other URL.
        SinkError: the local folder cannot be created.
    """
    cls = sink_class(spec.format)
    cls.check(spec)  # before anything is created
    folder = open_folder(spec.path, s3=s3, base_dir=base_dir, s3_client=s3_client)
    try:
        return cls(spec, folder)
    except BaseException:
        folder.close()
        raise


def output_stem(key: str) -> str:
    """A file stem for the outputs of the input ``key``: safe in every file system and S3 key
    (``[A-Za-z0-9._-]``, no leading dot, at most 100 characters), readable (the key's tail,
    with unsafe runs as ``_``), and unique: it ends with ``-`` and 10 hex digits of the key's
    SHA-256, so two keys that read alike (``a/b`` and ``a_b``) still get different stems.

    >>> output_stem("s3://bucket/x/y.json")
    'bucket_x_y.json-e9902845ee'
    >>> output_stem("../../etc/passwd")
    'etc_passwd-3754d6cb3a'
    """
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    text = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", key)
    # Accented letters keep their base letter (é -> e); other scripts become "_".
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = _UNSAFE.sub("_", text)
    # Keep the tail (the file name is the most telling part), then no leading dot, dash or "_".
    text = text[-(_STEM_MAX - _HASH_CHARS - 1) :].lstrip("._-").rstrip("_-") or "input"
    return f"{text}-{digest}"


class InputWriter(ABC):
    """The output of one input: items written as they come, made visible by :meth:`commit`.

    Not thread-safe (one writer per input, one thread per writer); several writers of one sink
    may be used at once. Used as a context manager, it is discarded when not committed.
    """

    def __init__(self) -> None:
        self.items = 0
        """Items written so far."""
        self.kept = 0
        """Items that stay in the output even if the writer is discarded (a store's parts
        already written: a store has no uncommitted rows across transactions)."""
        self.owners: set[str] = set()
        """The owners whose items the commit wrote (filled by sinks that keep owners apart,
        such as ``store``; the driver hands them to :meth:`Sink.finish`)."""

    def __enter__(self) -> InputWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()

    @abstractmethod
    def write(self, item: dict[str, Any]) -> None:
        """Write one item (the shape of ``TextualMemoryItem.to_dict()``).

        Raises:
            SinkError: it cannot be written (the writer stays usable for the next item).
            ValueError: the writer was committed or discarded.
        """

    @abstractmethod
    def commit(self) -> list[str]:
        """Make this input's items visible, replacing what an earlier run of the same input
        left; on failure nothing of this input stays visible (best effort).

        Returns:
            Where the items are (paths, ``s3://`` URLs, or whatever names the sink's storage).

        Raises:
            SinkError: they could not be made visible (the input is run again next time).
            ValueError: the writer was committed or discarded.
        """

    @abstractmethod
    def discard(self) -> None:
        """Drop what was written and not committed (committed items stay as they are); a
        no-op once committed or discarded."""


class Sink(ABC):
    """Where the items of a job go (see the module docstring).

    Built by :func:`build_sink` as ``cls(spec, folder)``: ``spec`` is the
    job's ``output``, ``folder`` the job's output folder (a local folder or an S3 prefix, from
    ``output.path``) where the manifest, errors and summary are kept; the sink closes it.
    """

    def __init__(self, spec: OutputSpec, folder: OutputFolder) -> None:
        self.spec = spec
        self.folder = folder

    @classmethod  # noqa: B027 - optional override
    def check(cls, spec: OutputSpec) -> None:
        """Refuse ``spec`` before anything is created (a library the sink needs is missing);
        the default accepts it.

        Raises:
            ConfigError: the sink cannot work with ``spec`` here.
        """

    @abstractmethod
    def open_input(self, key: str) -> InputWriter:
        """A writer for the items of the input ``key`` (its manifest key)."""

    def reader_for(self, config: MemReaderConfigFactory) -> BaseMemReader:
        """The reader a worker reads with, built from ``config``: a new one by default; a sink
        that writes into a memory store gives its :class:`~memreader.Memory`'s, which wires
        the reader to that store and keeps the owners' categories (see
        :class:`~memreader.batch.sinks.store.StoreSink`)."""
        return config.build()

    def finish(self, owners: Collection[str]) -> list[str]:
        """Called once by the job's driver (not a worker) after the last input of a run, with
        the :attr:`InputWriter.owners` of every input this run committed: work that spans
        inputs (the ``markdown`` sink exports those owners' memory). Not called when the run
        failed. The default does nothing.

        Returns:
            Where its outputs are (added to the summary's ``outputs``).

        Raises:
            SinkError: it failed (the inputs stay committed).
        """
        return []

    def close(self) -> None:
        """Close the clients of this sink and its folder."""
        self.folder.close()

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
