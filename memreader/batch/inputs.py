"""The inputs of a batch job: finding them (files, folders, globs, S3 prefixes: the read sides
of :mod:`memreader.batch.places`), hashing them for the manifest, and reading them lazily,
through their format (:mod:`memreader.batch.formats`), as batches of scenes for ``get_memory``.
They get what they need (:class:`InputsSpec`), not the whole job.

Ids (``user_id``, ``session_id``) follow the spec's :class:`~memreader.batch.job.IdSpec`:
``from: file_name`` (the default: the input's name without extension), ``from: constant``, or
``from: field`` (a key of the record: the JSON(L) line's object, a MemoryBank user's record, a
LoCoMo sample). MemoryBank and LoCoMo inputs have their own defaults when the spec does not set
the id: MemoryBank's ``user_id`` is the user (the corpus key, surrounding spaces removed) and its
``session_id`` ``memorybank:<user>``; LoCoMo's ``user_id`` is the ``sample_id`` and its
``session_id`` ``locomo:<sample_id>``.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from memreader.batch.formats import BadRecord, Format, Scene, format_class
from memreader.batch.job import JOB_FILES, InputSpec
from memreader.batch.places import FileSources, PlaceSettings
from memreader.batch.places.base import CHUNK, InputRef
from memreader.batch.places.opened import MAX_LINE_BYTES, OpenedInput
from memreader.errors import ConfigError

__all__ = [
    "MAX_LINE_BYTES",
    "BadRecord",
    "Batch",
    "InputRef",
    "Inputs",
    "InputsSpec",
    "OpenedInput",
    "batches",
]


@dataclass(frozen=True)
class InputsSpec:
    """What a job's inputs need: its ``inputs`` (``specs``), its ``type`` (``chat`` or
    ``doc``), ``scenes_per_call`` (the most scenes in a batch), the places' settings (the job
    file's folder, S3's settings) and ``output_path``, the job's ``output.path`` (the files
    right in it are never inputs)."""

    specs: tuple[InputSpec, ...]
    type: str
    scenes_per_call: int
    places: PlaceSettings
    output_path: str


@dataclass(frozen=True)
class Batch:
    """One ``get_memory`` call's worth of one input.

    ``scene_data``: chat scenes (each a list of OpenAI-style messages), or for documents a list
    of documents (each a list of one ``file`` part). ``info``: the ``user_id`` and
    ``session_id`` every scene here shares. ``first_scene``: the index, within the input, of
    ``scene_data[0]`` (the scenes of a batch are consecutive). ``labels``: one per scene, where
    it is in the input (``line 12``, ``user Alice, day 2023-05-01``, ``sample 3, session_2``).
    """

    scene_data: list[Any]
    info: dict[str, str]
    first_scene: int
    labels: list[str]


def batches(entries: Iterable[Scene | BadRecord], per_call: int) -> Iterator[Batch | BadRecord]:
    """Consecutive scenes that share their info, ``per_call`` at most, as batches; a bad record
    ends the batch before it, so a batch's scenes are always consecutive in the input."""
    pending: list[Scene] = []

    def flush() -> Batch:
        batch = Batch(
            scene_data=[s.data for s in pending],
            info=dict(pending[0].info),
            first_scene=pending[0].index,
            labels=[s.label for s in pending],
        )
        pending.clear()
        return batch

    for entry in entries:
        if isinstance(entry, BadRecord):
            if pending:
                yield flush()
            yield entry
            continue
        if pending and (
            entry.info != pending[0].info
            or entry.index != pending[-1].index + 1
            or len(pending) >= per_call
        ):
            yield flush()
        pending.append(entry)
    if pending:
        yield flush()


class Inputs:
    """The inputs ``spec`` describes: :meth:`discover` them, :meth:`content_hash` and
    :meth:`read` each.

    Args:
        spec: what the inputs need (see :class:`InputsSpec`).
        s3_client: a boto3 S3 client to use instead of one built from the S3 settings (never
            closed here).

    Raises:
        ConfigError: an input's format is unknown, or does not fit the job's type
            (``document`` in a chat job, a chat format in a doc job).
    """

    def __init__(self, spec: InputsSpec, *, s3_client: Any = None) -> None:
        self._spec = spec
        self._formats = [self._format(i, input_spec) for i, input_spec in enumerate(spec.specs)]
        self._sources = FileSources(spec.places, spec.output_path, s3_client=s3_client)

    def _format(self, index: int, spec: InputSpec) -> type[Format]:
        """The format class that reads the inputs of ``spec`` in this job."""
        # In a doc job, `auto` means each file is one document.
        job_type = self._spec.type
        name = "document" if job_type == "doc" and spec.format == "auto" else spec.format
        try:
            cls = format_class(name)
        except ConfigError as exc:
            raise ConfigError(f"inputs.{index}.format: {exc}") from None
        if job_type not in cls.job_types:
            if job_type == "doc":
                problem = (
                    "a doc job reads every input as a document "
                    f"(format auto or document, not {spec.format})"
                )
            else:
                problem = f"{spec.format} inputs need `type: {' or '.join(cls.job_types)}`"
            raise ConfigError(f"inputs.{index}.format: {problem}")
        return cls

    def discover(self) -> list[InputRef]:
        """Every input of every spec, in spec order then sorted; a location found by two specs
        is read once, by the first.

        The files right in the job's output folder, or right under its S3 prefix (where the job
        writes; not in folders below), are never inputs, so an output inside an input folder is
        not read back. Nor are the hidden files and folders of a folder (counted in
        :attr:`hidden`).

        Raises:
            InputError: a spec matches nothing (named: ``inputs.2: no file matches 'x/*.json'``)
                but the job's own outputs, or names a missing file or folder.
            FetchError: S3 could not be listed.
            ConfigError: a URL that is neither local nor a well-formed ``s3://``.
        """
        self._sources.forget_hidden()
        seen: set[str] = set()
        refs: list[InputRef] = []
        for i, spec in enumerate(self._spec.specs):
            for ref in self._sources.discover(i, spec.path, spec.within):
                if posixpath.basename(ref.location) in JOB_FILES:
                    continue  # a job's own manifest, errors file or summary
                if ref.location not in seen:
                    seen.add(ref.location)
                    refs.append(ref)
        return refs

    @property
    def hidden(self) -> int:
        """Hidden files and folders passed over by the last :meth:`discover` (a hidden folder
        counts once)."""
        return len(self._sources.hidden)

    def open(self, ref: InputRef) -> OpenedInput:
        """``ref`` opened for reading, within its spec's ``max_bytes``."""
        ref = self._bound(ref)
        source = self._sources.of(ref.location)
        return OpenedInput(ref, source, self._spec.specs[ref.spec_index].max_bytes)

    def content_hash(self, ref: InputRef) -> str:
        """The SHA-256 (hex) of the bytes of ``ref``, read in 1 MiB chunks: a changed input is
        read again by a resumed job, an unchanged one is skipped.

        Raises:
            InputError: the file cannot be read. FetchError: the S3 object cannot be read.
        """
        digest = hashlib.sha256()
        ref = self._bound(ref)
        with self._sources.of(ref.location).open(ref) as read:
            while chunk := read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    def lines(self, ref: InputRef) -> Iterator[str]:
        """Every line of ``ref`` (see :meth:`OpenedInput.lines`), streamed, for inputs that are
        not scenes (the stored items a refine job reads).

        Raises (while iterating):
            InputError: over the spec's ``max_bytes``, or a line over :data:`MAX_LINE_BYTES`.
            FetchError: the S3 object cannot be read.
        """
        yield from self.open(ref).lines()

    def read(self, ref: InputRef) -> Iterator[Batch | BadRecord]:
        """The batches of ``ref`` (``scenes_per_call`` scenes each at most) and its bad
        records, in input order, read lazily as the iterator is consumed.

        Raises (while iterating):
            InputError: the input as a whole cannot be read: over ``max_bytes``, not JSON, not
                the shape its format says, or not a chat input in a chat job (its subclass
                :class:`~memreader.errors.InvalidSceneError` for a wrong shape).
            FetchError: the S3 object cannot be read.
        """
        spec = self._spec.specs[ref.spec_index]
        input_format = self._formats[ref.spec_index]()
        scenes = input_format.read(self.open(ref), spec)
        yield from batches(scenes, self._spec.scenes_per_call)

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one stays open)."""
        self._sources.close()

    def _bound(self, ref: InputRef) -> InputRef:
        """``ref`` held to its spec's ``within``, whatever the ref says: the spec, not the
        ref handed back by an engine, decides where reading may go."""
        within = self._spec.specs[ref.spec_index].within
        return ref if ref.within == within else replace(ref, within=within)
