"""The inputs of a batch job: finding them (files, folders, globs, S3 prefixes), hashing them
for the manifest, and reading them lazily as batches of scenes for ``get_memory``.

Reading never holds more of an input than it must: JSONL is split into lines from 1 MiB chunks
(local or an S3 body alike), so a file of any size runs in bounded memory; whole-file formats
(JSON, MemoryBank, LoCoMo, documents) are read up to the input spec's ``max_bytes`` and refused
past it before anything is parsed. A malformed record (a line that is not JSON, a scene that is
not a scene, a missing id field) becomes a :class:`BadRecord` and reading goes on, so one bad
line does not cost a whole corpus; a problem with the whole input raises a typed
:class:`~memreader.errors.InputError` that names it.

Ids (``user_id``, ``session_id``) follow the spec's :class:`~memreader.batch.job.IdSpec`:
``from: file_name`` (the default: the input's name without extension), ``from: constant``, or
``from: field`` (a key of the record: the JSON(L) line's object, a MemoryBank user's record, a
LoCoMo sample). MemoryBank and LoCoMo inputs have their own defaults when the spec does not set
the id: MemoryBank's ``user_id`` is the user (the corpus key, surrounding spaces removed) and its
``session_id`` ``memorybank:<user>``; LoCoMo's ``user_id`` is the ``sample_id`` and its
``session_id`` ``locomo:<sample_id>``.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import PurePath, PurePosixPath
from typing import Any, Literal, TypeVar

from memreader.batch.job import JOB_FILES, FieldMapping, IdSpec, InputSpec, JobConfig
from memreader.datasets import is_memorybank, memorybank_scenes
from memreader.documents.s3_client import LazyS3Client
from memreader.errors import (
    ConfigError,
    FetchError,
    InputError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
)
from memreader.files import FileRefused, read_regular_file
from memreader.scene import ROLES, normalize_chat

__all__ = ["MAX_LINE_BYTES", "BadRecord", "Batch", "InputRef", "Sources"]

_T = TypeVar("_T")

#: Bytes read at a time, locally and from S3: the most a read holds beyond the current line.
_CHUNK = 1024 * 1024
#: The longest JSONL line kept; a longer one is a :class:`BadRecord` (skipped without being
#: held), so a file without newlines cannot take all memory.
MAX_LINE_BYTES = 64 * 1024 * 1024

# Opening must never block (a FIFO waits for a writer) nor make a terminal ours; the fstat of
# the opened descriptor then refuses anything but a regular file (see memreader.files).
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_GLOB_MAGIC = re.compile(r"[*?\[]")
_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")
_JSONL_EXTENSIONS = (".jsonl", ".ndjson")

_Format = Literal["json", "jsonl", "memorybank", "locomo", "document"]


@dataclass(frozen=True)
class InputRef:
    """One input found by :meth:`Sources.discover`.

    ``key`` is the manifest's stable id: the path relative to ``job.base_dir`` (``/``-separated)
    when under it, else absolute; ``s3://bucket/key`` for S3. ``location`` is what is opened:
    an absolute local path or the ``s3://`` URL. ``size`` is what the listing reported.
    """

    key: str
    spec_index: int
    location: str
    size: int | None


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


@dataclass(frozen=True)
class BadRecord:
    """A malformed part of an input, recorded while the rest is read.

    ``scene``: the index it would have had (``None`` when it is not one scene, e.g. a LoCoMo
    sample without a conversation); ``reason``: the typed error's class name
    (``InvalidSceneError``, ``InvalidMessageError``, ``InvalidInfoError``...).
    """

    scene: int | None
    label: str
    reason: str
    message: str


@dataclass(frozen=True)
class _Scene:
    """A checked scene before batching."""

    index: int
    label: str
    data: Any
    info: dict[str, str]


def _bad(scene: int | None, label: str, exc: InputError) -> BadRecord:
    """The record of ``exc``; its scene location is dropped (it is always scene 0 of the one
    scene checked), the message and part are kept."""
    where = []
    if exc.message_index is not None:
        where.append(f"message {exc.message_index}")
    if exc.part_index is not None:
        where.append(f"part {exc.part_index}")
    text = f"{', '.join(where)}: {exc.reason}" if where else exc.reason
    return BadRecord(scene=scene, label=label, reason=type(exc).__name__, message=text)


def _check_scene(scene: Any) -> None:
    """Refuse what ``get_memory`` would refuse, so one bad scene is a record of its own instead
    of failing the call that carries its batch. Unknown part types are let through: whether
    they are kept is the reader's setting."""
    if isinstance(scene, Mapping) or not isinstance(scene, str | list):
        raise InvalidSceneError(
            f"a scene must be a list of messages (or a string), got {type(scene).__name__}"
        )
    normalize_chat([scene], unknown_parts="keep")


def _map_message(raw: Any, mapping: FieldMapping, index: int) -> dict[str, Any]:
    """``raw`` in OpenAI style by ``mapping``. A role value that ``mapping.roles`` does not map
    stays as it is when it is an OpenAI role already; any other value (a speaker's name) is kept
    as the message's ``name``, with the mapped role or ``user``."""
    if not isinstance(raw, Mapping):
        raise InvalidMessageError(
            f"message {index} must be a mapping, got {type(raw).__name__}", message_index=index
        )
    if mapping.role not in raw:
        raise InvalidMessageError(f"message has no {mapping.role!r} key", message_index=index)
    if mapping.content not in raw:
        raise InvalidMessageError(f"message has no {mapping.content!r} key", message_index=index)
    value = raw[mapping.role]
    if not isinstance(value, str) or not value:
        raise InvalidMessageError(
            f"{mapping.role!r} must be a non-empty string", message_index=index
        )
    message: dict[str, Any] = {}
    if value in mapping.roles:
        message["role"] = mapping.roles[value]
    elif value in ROLES:
        message["role"] = value
    else:
        message["role"] = "user"
    if value not in ROLES:
        message["name"] = value
    message["content"] = raw[mapping.content]
    if mapping.time and raw.get(mapping.time) is not None:
        message["chat_time"] = raw[mapping.time]
    return message


def _record_scene(
    record: Any, mapping: FieldMapping | None
) -> tuple[Any, Mapping[str, Any] | None]:
    """The scene a JSON(L) record holds, and the record's object (for ``from: field`` ids)."""
    obj: Mapping[str, Any] | None = None
    if isinstance(record, Mapping):
        key = mapping.messages if mapping is not None and mapping.messages else "messages"
        if key not in record:
            raise InvalidSceneError(f"the record has no {key!r} key (its messages)")
        obj, messages = record, record[key]
    else:
        messages = record
    if mapping is not None and isinstance(messages, list):
        messages = [_map_message(m, mapping, i) for i, m in enumerate(messages)]
    return messages, obj


def _field_id(spec: IdSpec, which: str, record: Mapping[str, Any] | None) -> str:
    field = spec.field or ""
    value = record.get(field) if record is not None else None
    if value is None:
        raise InvalidInfoError(f"{which}: the record has no {field!r} field")
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InvalidInfoError(f"{which}: field {field!r} must be a non-empty string or integer")
    return str(value)


def _is_locomo(data: Any) -> bool:
    """Whether ``data`` is a LoCoMo sample, or a non-empty list of them."""
    samples = data if isinstance(data, list) else [data]
    return bool(samples) and all(
        isinstance(s, Mapping) and isinstance(s.get("conversation"), Mapping) for s in samples
    )


def _split_lines(read: Callable[[int], bytes], max_line: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` of each line read through ``read`` (1-based, without the
    newline); ``None`` for a line over ``max_line`` bytes, which is skipped, never held."""
    pending = bytearray()
    number = 0
    skipping = False
    while chunk := read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if not skipping:
                pending += chunk[start:end]
            yield number, None if skipping or len(pending) > max_line else bytes(pending)
            pending.clear()
            skipping = False
            start = end + 1
        if not skipping:
            pending += chunk[start:]
            if len(pending) > max_line:
                pending.clear()
                skipping = True
    if pending or skipping:
        yield number + 1, None if skipping else bytes(pending)


def _batches(entries: Iterable[_Scene | BadRecord], per_call: int) -> Iterator[Batch | BadRecord]:
    """Consecutive scenes that share their info, ``per_call`` at most, as batches; a bad record
    ends the batch before it, so a batch's scenes are always consecutive in the input."""
    pending: list[_Scene] = []

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


def _relative_key(location: str, base: str | None) -> str:
    if base is not None:
        rel = os.path.relpath(location, base)
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            return PurePath(rel).as_posix()
    return location


def _walk(folder: str) -> tuple[list[str], list[str]]:
    """The files under ``folder``, recursively, sorted, and the hidden files and folders
    (``.git``, ``.DS_Store``) passed over: they are not inputs (a hidden folder is not walked).
    Symlinked folders are not followed (no cycles)."""
    found = []
    hidden: list[str] = []
    for root, dirs, files in os.walk(folder):
        hidden.extend(os.path.join(root, d) for d in dirs if d.startswith("."))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = os.path.join(root, name)
            if name.startswith("."):
                hidden.append(path)
            elif os.path.isfile(path):
                found.append(path)
    return sorted(found), hidden


def _split_s3(url: str, where: str) -> tuple[str, str]:
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not bucket:
        raise ConfigError(f"{where}: an s3:// input needs a bucket: s3://bucket/prefix")
    return bucket, prefix


class Sources:
    """The inputs of ``job``: :meth:`discover` them, :meth:`content_hash` and :meth:`read` each.

    Args:
        job: the job; its ``inputs``, ``type``, ``scenes_per_call``, ``base_dir`` and ``s3``
            are used.
        s3_client: a boto3 S3 client to use instead of one built from ``job.s3`` (never closed
            here).

    Raises:
        ConfigError: an input's format does not fit the job's type (``document`` in a chat job,
            a chat format in a doc job).
    """

    def __init__(self, job: JobConfig, *, s3_client: Any = None) -> None:
        for i, spec in enumerate(job.inputs):
            if job.type == "chat" and spec.format == "document":
                raise ConfigError(f"inputs.{i}.format: document inputs need `type: doc`")
            if job.type == "doc" and spec.format not in ("auto", "document"):
                raise ConfigError(
                    f"inputs.{i}.format: a doc job reads every input as a document "
                    f"(format auto or document, not {spec.format})"
                )
        self._job = job
        self._s3 = LazyS3Client(job.s3, client=s3_client)
        self._hidden: set[str] = set()

    # --- discovery ----------------------------------------------------------------------------

    def discover(self) -> list[InputRef]:
        """Every input of every spec, in spec order then sorted; a location found by two specs
        is read once, by the first.

        An S3 input ``s3://bucket/prefix`` is the object ``prefix`` and the objects under
        ``prefix/`` (so ``s3://b/chats`` does not take ``chats-old/``); keys ending in ``/``
        are folder markers, not inputs.

        The files right in the job's output folder, or right under its S3 prefix (where the job
        writes; not in folders below), are never inputs, so an output inside an input folder is
        not read back. Nor are the hidden files and folders of a folder (counted in
        :attr:`hidden`).

        Raises:
            InputError: a spec matches nothing (named: ``inputs.2: no file matches 'x/*.json'``)
                but the job's own outputs, or names a missing file or folder.
            FetchError: S3 could not be listed.
            ConfigError: a URL that is neither local nor ``s3://``.
        """
        self._hidden.clear()
        seen: set[str] = set()
        refs: list[InputRef] = []
        for i, spec in enumerate(self._job.inputs):
            if spec.path.lower().startswith("s3://"):
                found = self._discover_s3(i, spec)
            else:
                found = self._discover_local(i, spec)
            for ref in found:
                if posixpath.basename(ref.location) in JOB_FILES:
                    continue  # a job's own manifest, errors file or summary
                if ref.location not in seen:
                    seen.add(ref.location)
                    refs.append(ref)
        return refs

    def _discover_local(self, index: int, spec: InputSpec) -> list[InputRef]:
        where = f"inputs.{index}"
        path = self._job.resolve(spec.path)
        if "://" in path:
            raise ConfigError(f"{where}.path: inputs are local paths or s3:// URLs")
        path = os.path.abspath(os.path.expanduser(path))
        if _GLOB_MAGIC.search(spec.path):
            files: list[str] = []
            for match in sorted(glob.glob(path, recursive=True)):
                if os.path.isdir(match):
                    files.extend(self._walk(match))
                elif os.path.isfile(match):
                    files.append(match)
            if not files:
                raise InputError(f"{where}: no file matches {spec.path!r}")
        elif os.path.isdir(path):
            files = self._walk(path)
            if not files:
                raise InputError(f"{where}: no file in folder {spec.path!r}")
        elif os.path.isfile(path):
            files = [path]
        elif os.path.lexists(path):
            raise InputError(f"{where}: {spec.path!r} is not a regular file or a folder")
        else:
            raise InputError(f"{where}: no such file or folder {spec.path!r}")
        output = self._job.output_location()
        if "://" not in output:
            folder = os.path.realpath(output)
            files = [f for f in files if os.path.dirname(os.path.realpath(f)) != folder]
            if not files:
                raise InputError(f"{where}: {spec.path!r} holds only the job's own output")
        base = os.path.abspath(self._job.base_dir) if self._job.base_dir else None
        refs = []
        for file in dict.fromkeys(files):
            try:
                size: int | None = os.stat(file).st_size
            except OSError:
                size = None
            refs.append(InputRef(_relative_key(file, base), index, file, size))
        return refs

    def _discover_s3(self, index: int, spec: InputSpec) -> list[InputRef]:
        where = f"inputs.{index}"
        bucket, prefix = _split_s3(spec.path, where)

        def listing() -> list[tuple[str, int | None]]:
            pages = (
                self._s3.get()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=bucket, Prefix=prefix)
            )
            return [
                (obj["Key"], obj.get("Size")) for page in pages for obj in page.get("Contents", ())
            ]

        objects = self._s3_call(f"{where}: listing s3://{bucket}/{prefix}", listing)
        folder = prefix.endswith("/") or not prefix
        refs = [
            InputRef(f"s3://{bucket}/{key}", index, f"s3://{bucket}/{key}", size)
            for key, size in sorted(objects)
            if not key.endswith("/") and (folder or key == prefix or key.startswith(prefix + "/"))
        ]
        if not refs:
            raise InputError(f"{where}: no object matches {spec.path!r}")
        output = self._job.output_location()
        if output.startswith("s3://"):
            out_bucket, _, out_prefix = output[len("s3://") :].partition("/")
            refs = [
                ref
                for ref in refs
                if bucket != out_bucket
                or posixpath.dirname(ref.location[len(f"s3://{bucket}/") :]) != out_prefix
            ]
            if not refs:
                raise InputError(f"{where}: {spec.path!r} holds only the job's own output")
        return refs

    @property
    def hidden(self) -> int:
        """Hidden files and folders passed over by the last :meth:`discover` (a hidden folder
        counts once; see :func:`_walk`)."""
        return len(self._hidden)

    def _walk(self, folder: str) -> list[str]:
        files, hidden = _walk(folder)
        self._hidden.update(hidden)
        return files

    # --- bytes --------------------------------------------------------------------------------

    def _s3_call(self, what: str, call: Callable[[], _T]) -> _T:
        """``call()``, with S3's failures (boto3 missing, botocore or connection errors) as a
        :class:`FetchError` that names ``what`` and the error code, never the endpoint."""
        try:
            return call()
        except ImportError:
            raise InputError(f"{what}: reading s3:// inputs needs boto3") from None
        except Exception as exc:
            module = type(exc).__module__
            if not module.startswith(("botocore", "boto3", "urllib3")) and not isinstance(
                exc, OSError
            ):
                raise
            response = getattr(exc, "response", None)
            code = (response or {}).get("Error", {}).get("Code") if response else None
            raise FetchError(f"{what}: {code or type(exc).__name__}") from exc

    @contextmanager
    def _open(self, ref: InputRef) -> Iterator[Callable[[int], bytes]]:
        """A ``read(size)`` over the bytes of ``ref``, closed on exit."""
        if ref.location.startswith("s3://"):
            bucket, key = _split_s3(ref.location, ref.key)
            response = self._s3_call(
                f"{ref.key}: reading",
                lambda: self._s3.get().get_object(Bucket=bucket, Key=key),
            )
            body = response["Body"]

            def read_s3(size: int) -> bytes:
                data: bytes = self._s3_call(f"{ref.key}: reading", lambda: body.read(size))
                return data

            try:
                yield read_s3
            finally:
                body.close()
            return
        try:
            fd = os.open(ref.location, _OPEN_FLAGS)
        except OSError as exc:
            raise InputError(f"{ref.key}: cannot be opened ({exc.strerror})") from None
        with os.fdopen(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(f"{ref.key}: not a regular file")

            def read_local(size: int) -> bytes:
                try:
                    data: bytes = handle.read(size)
                except OSError as exc:
                    raise InputError(f"{ref.key}: cannot be read ({exc.strerror})") from None
                return data

            yield read_local

    def _read_bytes(self, ref: InputRef, max_bytes: int) -> bytes:
        """The whole of ``ref``, refused (before reading, where its size is known) over
        ``max_bytes``."""
        if ref.size is not None and ref.size > max_bytes:
            raise InputError(f"{ref.key}: {ref.size} bytes, over the limit of {max_bytes}")
        if not ref.location.startswith("s3://"):
            try:
                return read_regular_file(ref.location, max_bytes)
            except FileRefused as exc:
                raise InputError(f"{ref.key}: {exc.reason}") from None
            except OSError as exc:
                raise InputError(f"{ref.key}: cannot be read ({exc.strerror})") from None
        chunks = []
        left = max_bytes + 1
        with self._open(ref) as read:
            while left > 0 and (chunk := read(min(left, _CHUNK))):
                chunks.append(chunk)
                left -= len(chunk)
        if left <= 0:
            raise InputError(f"{ref.key}: over the limit of {max_bytes} bytes")
        return b"".join(chunks)

    def content_hash(self, ref: InputRef) -> str:
        """The SHA-256 (hex) of the bytes of ``ref``, read in 1 MiB chunks: a changed input is
        read again by a resumed job, an unchanged one is skipped.

        Raises:
            InputError: the file cannot be read. FetchError: the S3 object cannot be read.
        """
        digest = hashlib.sha256()
        with self._open(ref) as read:
            while chunk := read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    # --- reading ------------------------------------------------------------------------------

    def lines(self, ref: InputRef) -> Iterator[str]:
        """Every line of ``ref`` (blank ones too, so counting them gives line numbers), without
        its newline, streamed like JSONL (for inputs that are not scenes, e.g. the stored items
        a refine job reads). Bytes that are not UTF-8 are replaced (U+FFFD), so the line fails
        whatever parses it instead of ending the input.

        Raises (while iterating):
            InputError: over the spec's ``max_bytes``, or a line over :data:`MAX_LINE_BYTES`.
            FetchError: the S3 object cannot be read.
        """
        spec = self._job.inputs[ref.spec_index]
        for number, line in self._raw_lines(ref, spec):
            if line is None:
                raise InputError(f"{ref.key}: line {number} is over {MAX_LINE_BYTES} bytes")
            text = line.decode("utf-8", errors="replace")
            yield text.removeprefix("\ufeff") if number == 1 else text

    def _raw_lines(self, ref: InputRef, spec: InputSpec) -> Iterator[tuple[int, bytes | None]]:
        """The lines of ``ref`` as :func:`_split_lines` gives them, within ``max_bytes``."""
        if ref.size is not None and ref.size > spec.max_bytes:
            raise InputError(f"{ref.key}: {ref.size} bytes, over the limit of {spec.max_bytes}")
        total = 0
        with self._open(ref) as read:

            def counted(size: int) -> bytes:
                nonlocal total
                chunk = read(size)
                total += len(chunk)
                if total > spec.max_bytes:
                    raise InputError(f"{ref.key}: over the limit of {spec.max_bytes} bytes")
                return chunk

            yield from _split_lines(counted, MAX_LINE_BYTES)

    def read(self, ref: InputRef) -> Iterator[Batch | BadRecord]:
        """The batches of ``ref`` (``job.scenes_per_call`` scenes each at most) and its bad
        records, in input order, read lazily as the iterator is consumed.

        Raises (while iterating):
            InputError: the input as a whole cannot be read: over ``max_bytes``, not JSON, not
                the shape its format says, or not a chat input in a chat job (its subclass
                :class:`InvalidSceneError` for a wrong shape).
            FetchError: the S3 object cannot be read.
        """
        spec = self._job.inputs[ref.spec_index]
        fmt = self._format(spec, ref)
        per_call = self._job.scenes_per_call
        if fmt == "jsonl":
            yield from _batches(self._jsonl(ref, spec), per_call)
            return
        if fmt == "document":
            yield from self._document(ref, spec)
            return
        data = self._load_json(ref, spec)
        if fmt == "auto-json":
            if is_memorybank(data):
                fmt = "memorybank"
            elif _is_locomo(data):
                fmt = "locomo"
            else:
                fmt = "json"
        if fmt == "memorybank":
            entries = self._memorybank(data, ref, spec)
        elif fmt == "locomo":
            entries = self._locomo(data, ref, spec)
        else:
            entries = self._json(data, ref, spec)
        yield from _batches(entries, per_call)

    def _format(self, spec: InputSpec, ref: InputRef) -> _Format | Literal["auto-json"]:
        if self._job.type == "doc":
            return "document"
        if spec.format != "auto":
            return spec.format
        name = ref.location.lower()
        if name.endswith(_JSONL_EXTENSIONS):
            return "jsonl"
        if name.endswith(".json"):
            return "auto-json"
        raise InputError(
            f"{ref.key}: not a chat input (only .json and .jsonl are read as chat by "
            "`format: auto`); read it with `type: doc`, or set the input's format"
        )

    def _load_json(self, ref: InputRef, spec: InputSpec) -> Any:
        raw = self._read_bytes(ref, spec.max_bytes)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise InvalidSceneError(f"{ref.key}: not JSON ({detail})") from None

    def _ids(
        self,
        spec: InputSpec,
        ref: InputRef,
        record: Mapping[str, Any] | None,
        defaults: tuple[str, str] | None = None,
    ) -> dict[str, str]:
        """``user_id`` and ``session_id`` by the spec; ``defaults`` stand for an id the spec
        does not set (MemoryBank's and LoCoMo's own)."""
        info = {}
        for i, which in enumerate(("user_id", "session_id")):
            id_spec: IdSpec | None = getattr(spec, which)
            if id_spec is None and defaults is not None:
                info[which] = defaults[i]
            elif id_spec is None or id_spec.source == "file_name":
                info[which] = PurePosixPath(ref.location.replace("\\", "/")).stem
            elif id_spec.source == "constant":
                info[which] = id_spec.value or ""
            else:
                info[which] = _field_id(id_spec, which, record)
        return info

    def _scene(
        self,
        index: int,
        label: str,
        make: Callable[[], tuple[Any, dict[str, str]]],
    ) -> _Scene | BadRecord:
        """The scene ``make`` builds and checks, or the bad record of why it could not."""
        try:
            scene, info = make()
            _check_scene(scene)
        except InputError as exc:
            return _bad(index, label, exc)
        return _Scene(index, label, scene, info)

    def _jsonl(self, ref: InputRef, spec: InputSpec) -> Iterator[_Scene | BadRecord]:
        index = 0
        for number, line in self._raw_lines(ref, spec):
            label = f"line {number}"
            if line is None:
                yield BadRecord(index, label, "InvalidSceneError", f"over {MAX_LINE_BYTES} bytes")
                index += 1
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                yield BadRecord(index, label, "InvalidSceneError", "not UTF-8")
                index += 1
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            yield self._scene(index, label, partial(self._jsonl_scene, text, ref, spec))
            index += 1

    def _jsonl_scene(self, text: str, ref: InputRef, spec: InputSpec) -> tuple[Any, dict[str, str]]:
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidSceneError(f"not JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise InvalidSceneError("not JSON: nested too deeply") from None
        scene, obj = _record_scene(record, spec.mapping)
        return scene, self._ids(spec, ref, obj)

    def _json(self, data: Any, ref: InputRef, spec: InputSpec) -> Iterator[_Scene | BadRecord]:
        key = spec.mapping.messages if spec.mapping and spec.mapping.messages else "messages"
        if isinstance(data, Mapping):
            records: Sequence[Any] = [data]
        elif isinstance(data, list):
            flat = bool(data) and all(
                isinstance(item, Mapping) and key not in item for item in data
            )
            records = [data] if flat else data
        else:
            raise InvalidSceneError(
                f"{ref.key}: expected a list of scenes, one scene or one record, "
                f"got {type(data).__name__}"
            )

        for i, record in enumerate(records):
            yield self._scene(i, f"scene {i}", partial(self._json_scene, record, ref, spec))

    def _json_scene(
        self, record: Any, ref: InputRef, spec: InputSpec
    ) -> tuple[Any, dict[str, str]]:
        scene, obj = _record_scene(record, spec.mapping)
        return scene, self._ids(spec, ref, obj)

    def _memorybank(
        self, data: Any, ref: InputRef, spec: InputSpec
    ) -> Iterator[_Scene | BadRecord]:
        if not isinstance(data, Mapping) or not data:
            raise InvalidSceneError(
                f"{ref.key}: not a MemoryBank file: "
                "expected {user: {'history': {day: [pairs]}}}"
            )
        index = 0
        for user_key, record in data.items():
            user = str(user_key).strip() or str(user_key)
            if not isinstance(record, Mapping) or not isinstance(record.get("history"), Mapping):
                yield BadRecord(
                    None, f"user {user}", "InvalidSceneError", "no 'history' mapping of days"
                )
                continue
            defaults = (user, f"memorybank:{user}")
            for day, pairs in record["history"].items():
                if isinstance(pairs, list) and not pairs:
                    continue  # a day without pairs is no scene (as in memorybank_scenes)
                make = partial(self._memorybank_day, user, day, pairs, record, defaults, ref, spec)
                yield self._scene(index, f"user {user}, day {day}", make)
                index += 1

    def _memorybank_day(
        self,
        user: str,
        day: Any,
        pairs: Any,
        record: Mapping[str, Any],
        defaults: tuple[str, str],
        ref: InputRef,
        spec: InputSpec,
    ) -> tuple[Any, dict[str, str]]:
        # One day at a time through memorybank_scenes: a malformed day is a bad record of its
        # own instead of failing the whole file.
        scenes = memorybank_scenes({user: {"history": {day: pairs}}})[user]
        return scenes[0], self._ids(spec, ref, record, defaults)

    def _locomo(self, data: Any, ref: InputRef, spec: InputSpec) -> Iterator[_Scene | BadRecord]:
        samples = data if isinstance(data, list) else [data]
        index = 0
        for s, sample in enumerate(samples):
            conversation = sample.get("conversation") if isinstance(sample, Mapping) else None
            if not isinstance(conversation, Mapping):
                yield BadRecord(None, f"sample {s}", "InvalidSceneError", "no 'conversation'")
                continue
            sample_id = sample.get("sample_id")
            name = str(sample_id) if isinstance(sample_id, str | int) and sample_id != "" else None
            defaults = (
                name or PurePosixPath(ref.location).stem,
                f"locomo:{name or PurePosixPath(ref.location).stem}",
            )
            sessions = sorted(
                (int(m.group(1)), k) for k in conversation if (m := _LOCOMO_SESSION.match(str(k)))
            )
            for _, session in sessions:
                label = f"sample {name if name is not None else s}, {session}"
                make = partial(
                    self._locomo_scene, conversation, session, sample, defaults, ref, spec
                )
                yield self._scene(index, label, make)
                index += 1

    def _locomo_scene(
        self,
        conversation: Mapping[str, Any],
        session: str,
        sample: Mapping[str, Any],
        defaults: tuple[str, str],
        ref: InputRef,
        spec: InputSpec,
    ) -> tuple[Any, dict[str, str]]:
        scene = self._locomo_session(conversation, session, spec.mapping)
        return scene, self._ids(spec, ref, sample, defaults)

    @staticmethod
    def _locomo_session(
        conversation: Mapping[str, Any], session: str, mapping: FieldMapping | None
    ) -> list[dict[str, Any]]:
        """A LoCoMo session as a scene: ``speaker_a`` is the user and ``speaker_b`` the
        assistant unless ``mapping.roles`` says otherwise; every message keeps its speaker as
        ``name``, its ``dia_id`` as ``message_id`` and the session's date as ``chat_time``."""
        turns = conversation[session]
        if not isinstance(turns, list):
            raise InvalidSceneError(f"{session} must be a list of turns")
        when = conversation.get(f"{session}_date_time")
        roles = {
            str(conversation.get("speaker_a")): "user",
            str(conversation.get("speaker_b")): "assistant",
            **(mapping.roles if mapping is not None else {}),
        }
        scene = []
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping):
                raise InvalidMessageError("a turn must be a mapping", message_index=i)
            speaker, text = turn.get("speaker"), turn.get("text")
            if not isinstance(speaker, str) or not speaker or not isinstance(text, str):
                raise InvalidMessageError(
                    "a turn needs string 'speaker' and 'text'", message_index=i
                )
            message: dict[str, Any] = {
                "role": roles.get(speaker, "user"),
                "name": speaker,
                "content": text,
            }
            if isinstance(when, str) and when.strip():
                message["chat_time"] = when
            if isinstance(turn.get("dia_id"), str):
                message["message_id"] = turn["dia_id"]
            scene.append(message)
        return scene

    def _document(self, ref: InputRef, spec: InputSpec) -> Iterator[Batch | BadRecord]:
        name = PurePosixPath(ref.location.replace("\\", "/")).name
        try:
            info = self._ids(spec, ref, None)
        except InputError as exc:
            yield _bad(0, "document", exc)
            return
        data = self._read_bytes(ref, spec.max_bytes)
        part = {
            "type": "file",
            "file": {"file_data": base64.b64encode(data).decode("ascii"), "filename": name},
        }
        yield Batch(scene_data=[[part]], info=info, first_scene=0, labels=["document"])

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one stays open)."""
        self._s3.close()
