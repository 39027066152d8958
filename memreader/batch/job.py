"""Batch job files: what to read (inputs), with which reader, in which mode, where to write
(output) and on which engine; validated by pydantic, with ``${ENV}`` interpolation, and errors
that name the key at fault (``inputs.0.format: ...``).

>>> job = JobConfig.model_validate(
...     {"inputs": [{"path": "chats/*.jsonl"}], "output": {"path": "out"}})
>>> job.inputs[0].format, job.engine.kind, job.output.format
('auto', 'local', 'jsonl')
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from memreader.batch.places import output_location
from memreader.batch.places.local import resolve_path
from memreader.batch.registries import check_format_name, check_sink_name
from memreader.config_files import interpolate_env, read_yaml_config
from memreader.config_model import ConfigModel
from memreader.errors import ConfigError
from memreader.fetch.settings import S3Config
from memreader.modes import ReadMode
from memreader.scenes.scene import ROLES
from memreader.stores.urls import resolve_store_url, sqlite_file

__all__ = [
    "ERRORS_FILE",
    "JOB_FILES",
    "MANIFEST_FILE",
    "SUMMARY_FILE",
    "EngineSpec",
    "FieldMapping",
    "IdSpec",
    "InputSpec",
    "JobConfig",
    "OutputSpec",
    "load_job",
    "resolve_store_url",
    "sqlite_file",
]

#: The files a job writes next to its items; never taken for inputs (a refinement job reads an
#: ingest job's output folder).
MANIFEST_FILE = "_manifest.json"
ERRORS_FILE = "_errors.jsonl"
SUMMARY_FILE = "_summary.json"
JOB_FILES = frozenset({MANIFEST_FILE, ERRORS_FILE, SUMMARY_FILE})
_ROLE_NAMES = ", ".join(sorted(ROLES))


class IdSpec(ConfigModel):
    """How an input's ``user_id`` or ``session_id`` is derived: a field of the record
    (``from: field``, ``field: user``), the input's file name without extension
    (``from: file_name``), or a constant (``from: constant``, ``value: u1``)."""

    source: Literal["field", "file_name", "constant"] = Field(default="file_name", alias="from")
    field: str | None = None
    value: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> IdSpec:
        if self.source == "field" and not self.field:
            raise ValueError("from: field needs `field` (the record's key)")
        if self.source == "constant" and not self.value:
            raise ValueError("from: constant needs a non-empty `value`")
        return self


class FieldMapping(ConfigModel):
    """Where the messages of a record are, and which keys of a message hold its role, text and
    time (for JSON/JSONL layouts that are not OpenAI-style scenes). ``messages: null``: the
    record itself is the list of messages.

    ``roles`` maps the layout's role (or speaker) values to OpenAI roles; a value that is an
    OpenAI role already (``user``, ``assistant``...) stays as it is. Any other value is a
    speaker: it is kept as the message's ``name``, and its role is the one ``roles`` gives it,
    else ``default_role``. A speaker that neither gives a role is never silently the user: its
    record is a bad record (``InvalidMessageError`` naming the speaker) and the job goes on.
    """

    messages: str | None = None
    role: str = "role"
    content: str = "content"
    time: str | None = "chat_time"
    roles: dict[str, str] = Field(default_factory=dict)
    default_role: str | None = None

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, value: dict[str, str]) -> dict[str, str]:
        for speaker, role in value.items():
            if role not in ROLES:
                raise ValueError(f"{speaker!r} maps to {role!r}, not a role ({_ROLE_NAMES})")
        return value

    @field_validator("default_role")
    @classmethod
    def _known_default(cls, value: str | None) -> str | None:
        if value is not None and value not in ROLES:
            raise ValueError(f"{value!r} is not a role ({_ROLE_NAMES})")
        return value


class InputSpec(ConfigModel):
    """One entry of ``inputs``: a file, a folder (its files, recursively, sorted), a glob
    (``data/**/*.jsonl``) or an S3 prefix (``s3://bucket/prefix``), and how to read it.

    ``format``: a registered input format (:mod:`memreader.batch.formats`): ``json`` (a list of
    scenes, or one flat scene), ``jsonl`` (one scene per line: a list of messages, or a record
    with ``mapping.messages``), ``memorybank`` (users' ``history`` by day: one scene per day),
    ``locomo`` (``session_N`` lists with ``session_N_date_time``), ``document`` (each file one
    document), ``auto`` (by extension, and MemoryBank/LoCoMo by shape), or a plugin's.

    ``user_id`` and ``session_id`` (see :class:`IdSpec`); unset, each format has its own: the
    user for MemoryBank (session ``memorybank:<user>``), the sample for LoCoMo, else the file
    name.

    ``within`` (a local folder; none by default): every file read must lie inside it once
    symlinks are followed; a file of a folder or glob that resolves outside is passed over
    (counted with the hidden ones), and one named directly is an ``InputError``. The service
    sets it to the root a job over HTTP names (a symlink in that root must not lead out).
    """

    path: str = Field(min_length=1)
    format: str = "auto"
    mapping: FieldMapping | None = None
    user_id: IdSpec | None = None
    session_id: IdSpec | None = None
    max_bytes: int = Field(default=1024**3 * 4, gt=0)
    within: str | None = None

    @field_validator("path")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\0" in value:
            raise ValueError("path holds a NUL character")
        return value

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        return check_format_name(value)


class OutputSpec(ConfigModel):
    """Where items go: a folder or ``s3://bucket/prefix`` (``path``), and the registered sink
    that writes them (``format``, :mod:`memreader.batch.sinks`): ``jsonl`` (one file per input,
    or shards of about ``shard_bytes``), ``parquet`` (needs ``pyarrow``: ``pip install
    memreader[parquet]``), ``store`` (a memory store, ``store: sqlite:///m.db``),
    ``markdown`` (a store, then its owners' memory as Markdown files under ``path``, laid out
    as ``layout`` says: see :mod:`memreader.batch.sinks.markdown`), or a plugin's. The
    manifest, errors file and summary go to ``path``, next to the items of file sinks.

    With ``store`` (a store URL, kept as a secret), ``format`` defaults to ``store`` and
    ``path`` to a folder next to a SQLite file (``sqlite:///m.db``: ``m.db.batch``); with another
    store (``postgresql://...``) ``path`` is required.

    >>> OutputSpec(store="sqlite:///m.db").path, OutputSpec(store="sqlite:///m.db").format
    ('m.db.batch', 'store')
    """

    path: str = Field(min_length=1)
    format: str = "jsonl"
    shard_bytes: int | None = Field(default=None, gt=0)
    store: SecretStr | None = None
    layout: Literal["flat", "memu"] = Field(
        default="flat",
        description="format: markdown only: flat (index.md and <category>.md per user) or memu "
        "(memory.md and skill.md entry files, index/, memory/ and skill/ folders)",
    )

    @model_validator(mode="before")
    @classmethod
    def _store_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("store") is None:
            return data
        data = dict(data)
        store = data["store"]
        url = store.get_secret_value() if isinstance(store, SecretStr) else str(store)
        scheme = url.partition("://")[0].lower() if "://" in url else None
        if scheme is None:
            raise ValueError("store: a store URL looks like sqlite:///memories.db")
        data.setdefault("format", "store")
        if data.get("path") is None:
            file = sqlite_file(url)
            if file is None:
                raise ValueError(
                    f"output.path is required with a {scheme} store (where the manifest, "
                    "errors and summary go): a folder or s3://bucket/prefix"
                )
            data["path"] = f"{file}.batch"
        return data

    @field_validator("format")
    @classmethod
    def _known_sink(cls, value: str) -> str:
        return check_sink_name(value)

    @model_validator(mode="after")
    def _store_and_format(self) -> OutputSpec:
        if self.format in ("store", "markdown") and self.store is None:
            raise ValueError(
                f"format: {self.format} needs output.store (a store URL, sqlite:///m.db)"
            )
        if self.store is not None and self.format not in ("store", "markdown"):
            raise ValueError(
                f"output.store is written by format: store or markdown, not {self.format}"
            )
        if self.layout != "flat" and self.format != "markdown":
            raise ValueError(f"output.layout is for format: markdown, not {self.format}")
        return self


class EngineSpec(ConfigModel):
    """Where inputs run: ``local`` (``workers`` processes, each building its reader once) or
    ``ray`` (``address``: ``auto``, ``ray://host:port`` or ``host:port`` for a cluster; none: a
    local instance). The LLM concurrency budget of the reader config applies per worker."""

    kind: Literal["local", "ray"] = "local"
    workers: int = Field(default=1, ge=1, le=1024)
    address: str | None = None


class JobConfig(ConfigModel):
    """A batch job (see the README's "Batch ingestion").

    ``reader``: the reader config, inline (``backend`` and ``config``) or a path to a reader
    YAML (relative to the job file). ``type`` and ``mode``: as in ``get_memory`` (``refine``
    jobs take JSONL of fast items and ignore ``mode``). ``scenes_per_call``: scenes given to one
    ``get_memory`` call (embedding batches span them). ``created_at``: stamped on every item
    instead of the time it was made, for outputs that are byte-identical across runs.
    """

    reader: dict[str, Any] | str = Field(default_factory=dict)
    type: Literal["chat", "doc"] = "chat"
    mode: ReadMode = "fast"
    inputs: list[InputSpec] = Field(min_length=1)
    output: OutputSpec
    engine: EngineSpec = Field(default_factory=EngineSpec)
    s3: S3Config = Field(default_factory=S3Config)
    scenes_per_call: int = Field(default=16, ge=1, le=10_000)
    created_at: datetime | None = None
    tags: list[str] = Field(default_factory=list)
    base_dir: str | None = None

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("created_at must include a time zone (e.g. 2026-01-01T00:00:00Z)")
        return value

    def reader_config(self) -> dict[str, Any]:
        """The reader config as a mapping (read from its file when ``reader`` is a path)."""
        if isinstance(self.reader, str):
            path = Path(self.reader)
            if not path.is_absolute() and self.base_dir:
                path = Path(self.base_dir) / path
            return dict(interpolate_env(read_yaml_config(path), "reader"))
        return dict(self.reader)

    def resolve(self, path: str) -> str:
        """``path`` relative to the job file's folder (URLs and absolute paths as they are)."""
        return resolve_path(path, self.base_dir)

    def store_url(self) -> str | None:
        """The output store's URL (secret revealed; a relative SQLite file made relative to the
        job file's folder), or ``None`` when the output is not a store."""
        store = self.output.store
        if store is None:
            return None
        return resolve_store_url(store.get_secret_value(), self.base_dir)

    def output_location(self) -> str:
        """Where the outputs go, as the sink resolves ``output.path``: ``s3://bucket/prefix``
        (without outer slashes) or the absolute local folder. Nothing is created.

        Raises:
            ConfigError: a malformed ``s3://`` URL.

        >>> JobConfig.model_validate(
        ...     {"inputs": [{"path": "x"}], "output": {"path": "s3://b/out/"}}).output_location()
        's3://b/out'
        """
        return output_location(self.output.path, self.base_dir)


def load_job(path: str | os.PathLike[str]) -> JobConfig:
    """The job in the YAML file ``path``, ``${ENV}`` interpolated and validated; relative paths in
    it are relative to the file's folder.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or a key is wrong (named by its path,
            e.g. ``inputs.0.user_id.from``).
    """
    data = read_yaml_config(path)
    data = interpolate_env(data, "job")
    if not isinstance(data, dict):  # pragma: no cover - read_yaml_config returns mappings
        raise ConfigError(f"job {os.fspath(path)!r} must be a mapping")
    data.setdefault("base_dir", os.path.dirname(os.path.abspath(path)))
    return JobConfig.model_validate(data)
