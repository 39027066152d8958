"""The data memreader emits: memory items, their metadata and their exact provenance.

A :class:`SourceMessage` says where an item's text came from: the scene, the message, and the
character ``span`` of that message's text. ``content`` is exactly ``text[span[0]:span[1]]``, so a
caller holding the original input can always re-extract what an item used.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from memreader.errors import InputError
from memreader.registry import Registry
from memreader.scopes import DEFAULT_VISIBILITY, MAX_SCOPE_ID_CHARS, Visibility


class MemoryType(str, Enum):
    """The memory types of MemOS's textual memory."""

    WORKING = "WorkingMemory"
    LONG_TERM = "LongTermMemory"
    USER = "UserMemory"
    OUTER = "OuterMemory"
    TOOL_SCHEMA = "ToolSchemaMemory"
    TOOL_TRAJECTORY = "ToolTrajectoryMemory"
    RAW_FILE = "RawFileMemory"
    SKILL = "SkillMemory"
    PREFERENCE = "PreferenceMemory"
    CONTEXT = "Context"


MEMORY_TYPES: tuple[str, ...] = tuple(t.value for t in MemoryType)

#: The longest ``importance_reason`` an item holds (one line).
MAX_IMPORTANCE_REASON_CHARS = 200


class SourceMessage(BaseModel):
    """Where (part of) an item's text came from.

    ``span`` holds start and end character offsets into the text of message ``message_index``
    of scene ``scene_index`` (for a content-part list, into part ``part_index``); ``content`` is
    that slice verbatim. Non-text parts (an image URL, a file) have no span.

    ``transformed_by`` names the pipeline steps that changed this message's text before it was
    windowed (``["redact"]``); then ``span`` and ``content`` index the text as those steps left
    it, not the caller's original. Empty: the span indexes the caller's text itself.

    ``name`` is the speaker's name when the message gave one (OpenAI's ``name`` field; LoCoMo's
    speakers), so several speakers with the same ``role`` stay apart.

    For a document (or a file, image or audio read from a chat), ``doc_path`` names where it
    came from: the path as given, the URL without credentials or query, or ``s3://bucket/key``;
    spans then index its converted text (or transcript). A document cut into several windows
    gives each source its chunk: ``chunk_index`` of ``chunk_count`` (the windows that hold part
    of that document, in order), and ``heading``, the Markdown headings in effect where the
    chunk starts (``"Report > Costs"``).

    ``image_data_url`` keeps an image that was given inline (a ``data:`` URL in the message) as
    it was prepared for a vision model (downsized, re-encoded, metadata dropped), so that
    refinement can send it to the vision model again; it is set only for inline images of at
    most ``images.keep_inline_bytes`` (an image read from a path, URL or ``s3://`` keeps its
    reference in ``doc_path`` instead).
    """

    model_config = ConfigDict(extra="forbid")

    type: str = "chat"
    role: str | None = None
    name: str | None = None
    chat_time: str | None = None
    timestamp: datetime | None = None
    message_id: str | None = None
    scene_index: int
    message_index: int
    part_index: int | None = None
    span: tuple[int, int] | None = None
    content: str = ""
    doc_path: str | None = None
    chunk_index: int | None = None
    chunk_count: int | None = None
    heading: str | None = None
    transformed_by: list[str] = Field(default_factory=list)
    image_data_url: str | None = None

    @field_validator("image_data_url")
    @classmethod
    def _inline_image(cls, value: str | None) -> str | None:
        if value is not None and not value[:11].lower().startswith("data:image/"):
            raise ValueError("image_data_url must be a data:image/... URL")
        return value

    @field_validator("timestamp")
    @classmethod
    def _timestamp_in_range(cls, value: datetime | None) -> datetime | None:
        return None if value is None else in_utc_range(value, "timestamp")

    @model_validator(mode="after")
    def _span_matches_content(self) -> SourceMessage:
        if self.span is not None:
            start, end = self.span
            if not 0 <= start <= end:
                raise ValueError(f"span {self.span} is not an ordered pair of offsets")
            if end - start != len(self.content):
                raise ValueError(
                    f"span {self.span} covers {end - start} characters "
                    f"but content has {len(self.content)}"
                )
        return self


#: What the ``reconcile`` pass decided for a new memory against the stored ones it resembles.
ReconcileEvent = Literal["ADD", "UPDATE", "SUPERSEDE", "NONE"]


class Reconciliation(BaseModel):
    """The ``reconcile`` pass's decision for one item, applied by a memory store when the item
    is written (:mod:`memreader.stores.write_decisions`).

    ``event``: ``ADD`` (a new fact), ``UPDATE`` (the item's memory is the merged text of itself
    and stored memory ``target_id``, which it replaces), ``SUPERSEDE`` (it contradicts
    ``target_id`` and is newer: the target stops holding when the item starts), ``NONE``
    (``target_id`` already says it: the target is reinforced, the item not stored).
    ``target_id`` is the stored memory's id (``None`` for ``ADD``); ``reason`` says why, in one
    line.

    >>> Reconciliation(event="SUPERSEDE", target_id="m1", reason="moved").event
    'SUPERSEDE'
    """

    model_config = ConfigDict(extra="forbid")

    event: ReconcileEvent
    target_id: str | None = None
    reason: str = ""


def in_utc_range(value: datetime, what: str) -> datetime:
    """``value`` when it has a time in UTC (years 1 to 9999: what a store converts it to);
    a naive time is taken as UTC, so it always has one.

    >>> in_utc_range(datetime(9999, 12, 31, 23, tzinfo=timezone.utc), "t").year
    9999

    Raises:
        ValueError: an aware time whose UTC falls outside (``9999-12-31T23:00-05:00``).
    """
    if value.tzinfo is not None:
        try:
            value.astimezone(timezone.utc)
        except OverflowError:
            raise ValueError(
                f"{what} {value.isoformat()} is out of range: in UTC it falls outside years 1 "
                "to 9999"
            ) from None
    return value


def _unset(value: object) -> bool:
    return value is None


def _private(value: object) -> bool:
    return value == DEFAULT_VISIBILITY


class TextualMemoryItemMetadata(BaseModel):
    """Who the memory belongs to, what kind it is, and where it came from.

    ``RawFileMemory`` items (a document chunk kept verbatim in fine mode) are chained in document
    order by ``preceding_id`` and ``following_id``, and ``summary_ids`` names the fine items
    extracted from the chunk. Items made by ``fine_transfer_simple_mem`` name the stored item
    they were refined from in ``refined_from``. ``embedding_model`` names the embedder that
    made ``embedding``, with the precision it ran in (``local:all-MiniLM-L6-v2:int8``, or
    ``local:all-MiniLM-L6-v2`` where int8 failed this CPU's check and fp32 ran instead), so
    vectors of different models or precisions are never compared unknowingly.

    ``importance`` (0..1) says how much the memory matters, and ``importance_reason`` why, in
    one line (``"model: ..."`` where the extraction model scored it, ``"heuristic: ..."`` where
    :mod:`memreader.extraction.importance` did). ``valid_from`` is when the fact began to hold:
    the date the model resolved from the cited messages' times, else the earliest time among
    the sources. All three are ``None`` where nothing set them (an item stored before they
    existed loads with ``None``).

    ``reconcile`` is the ``reconcile`` pass's decision (:class:`Reconciliation`), which a
    memory store applies on write; ``None`` where the pass did not run (the default).

    ``agent_id`` and ``task_id`` name the agent and the task the memory belongs to (``None``:
    none), and ``visibility`` whether it is ``private`` to them or ``shared`` across its
    owner's tasks (:mod:`memreader.scopes`); an item stored before scopes loads unscoped and
    private, and an unscoped private item's JSON leaves the three out.

    ``categories`` names the categories the ``categorize`` step linked the item to (see
    :mod:`memreader.categories`); empty where it did not run.
    """

    model_config = ConfigDict(extra="forbid")

    user_id: str
    session_id: str
    # Left out of the JSON when unscoped: an unscoped item's JSON is what it was before scopes.
    agent_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_SCOPE_ID_CHARS, exclude_if=_unset
    )
    task_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_SCOPE_ID_CHARS, exclude_if=_unset
    )
    visibility: Visibility = Field(default=DEFAULT_VISIBILITY, exclude_if=_private)
    memory_type: MemoryType = MemoryType.LONG_TERM
    status: str = "activated"
    key: str | None = None
    tags: list[str] = Field(default_factory=list)
    sources: list[SourceMessage] = Field(default_factory=list)
    embedding: list[float] | None = None
    embedding_model: str | None = None
    background: str = ""
    confidence: float | None = Field(default=None, allow_inf_nan=False)
    info: dict[str, Any] = Field(default_factory=dict)
    file_ids: list[str] = Field(default_factory=list)
    preceding_id: str | None = None
    following_id: str | None = None
    summary_ids: list[str] = Field(default_factory=list)
    refined_from: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    importance_reason: str | None = Field(default=None, max_length=MAX_IMPORTANCE_REASON_CHARS)
    valid_from: datetime | None = None
    reconcile: Reconciliation | None = None
    categories: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("created_at", "valid_from")
    @classmethod
    def _aware(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError(f"{info.field_name} must be timezone-aware")
        return None if value is None else in_utc_range(value, str(info.field_name))

    @field_validator("embedding")
    @classmethod
    def _finite(cls, value: list[float] | None) -> list[float] | None:
        # A NaN or an infinity poisons every cosine it enters. The sum first: one C loop
        # (checking each float in Python costs more than the rest of the item).
        finite = value is None or math.isfinite(sum(value))
        if not finite and not all(math.isfinite(x) for x in value or ()):
            raise ValueError("embedding holds a NaN or an infinity")
        return value

    @field_validator("importance_reason")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and "".join(value.splitlines()) != value:
            raise ValueError("importance_reason must be one line")
        return value


class TextualMemoryItem(BaseModel):
    """One memory: its text, a deterministic id and its metadata.

    >>> item = TextualMemoryItem(
    ...     id="x", memory="I like tea",
    ...     metadata=TextualMemoryItemMetadata(user_id="u", session_id="s"))
    >>> TextualMemoryItem.from_dict(item.to_dict()) == item
    True
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    memory: str
    metadata: TextualMemoryItemMetadata

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO strings, enums as their values)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TextualMemoryItem:
        """Rebuild an item from :meth:`to_dict` output, or read another library's item dict
        through the :data:`ITEM_FORMATS` that recognizes it (a MemOS item: see
        :mod:`memreader.memos.items_in`; what memreader has no field for is kept in
        ``metadata.info["memos"]``, with the provenance that could not be recovered)."""
        try:
            return cls.model_validate(data)
        except ValidationError:
            # A dict memreader's own model accepts is memreader's; only one it refuses is
            # offered to the other formats, so reading memreader's items costs nothing more.
            fmt = _format_of(data)
            if fmt is None:
                raise
        data = fmt.read(data, _METADATA_FIELDS, _SOURCE_FIELDS)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:  # a field of that format memreader cannot hold, named
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "item"
            raise fmt.invalid(where, first["msg"]) from None

    def to_memos_dict(self, status: str | None = None) -> dict[str, Any]:
        """This item as the dict MemOS's ``TextualMemoryItem.from_dict`` accepts (see
        :mod:`memreader.memos.items_out`); ``status`` (``activated``, ``archived``,
        ``deleted``...) replaces the item's own. :meth:`from_dict` reads it back unchanged."""
        return ITEM_FORMATS.get("memos").write(self.to_dict(), status)


class ItemFormat(Protocol):
    """Another library's memory item dicts, read as memreader's and written from them.

    A format registers itself in :data:`ITEM_FORMATS`; MemOS's
    (:mod:`memreader.memos.formats`) is loaded by name the first time an item dict needs it,
    so this module never imports the package that knows MemOS.
    """

    def recognizes(self, data: dict[str, Any]) -> bool:
        """Whether ``data`` is an item dict of this format."""
        ...

    def read(
        self, data: dict[str, Any], metadata_fields: frozenset[str], source_fields: frozenset[str]
    ) -> dict[str, Any]:
        """The memreader item dict for ``data``, given the field names of memreader's metadata
        and sources (what has no field is kept in ``info``, never dropped).

        Raises:
            MemReaderError: ``data`` is of this format but cannot be read (a typed error
                naming the field).
        """
        ...

    def write(self, data: dict[str, Any], status: str | None) -> dict[str, Any]:
        """This format's item dict for the memreader item dict ``data`` (``item.to_dict()``),
        ``status`` replacing the item's own."""
        ...

    def invalid(self, where: str, why: str) -> InputError:
        """The typed error for an item of this format whose field ``where`` (``metadata.
        confidence``) memreader cannot hold, and ``why``."""
        ...


#: Item formats by name; the built-in ``memos`` is imported on first lookup.
ITEM_FORMATS: Registry[ItemFormat] = Registry(
    "item format", lazy={"memos": "memreader.memos.formats"}
)


def _format_of(data: object) -> ItemFormat | None:
    if not isinstance(data, dict):
        return None
    for name in ITEM_FORMATS.names():
        fmt = ITEM_FORMATS.get(name)
        if fmt.recognizes(data):
            return fmt
    return None


_METADATA_FIELDS = frozenset(TextualMemoryItemMetadata.model_fields)
_SOURCE_FIELDS = frozenset(SourceMessage.model_fields)
