"""A MIRROR of MemOS's memory item model, for tests only: MemOS (``MemoryOS`` on PyPI) cannot be
installed beside memreader (it pins openai < 2 and pulls transformers, fastapi, sqlalchemy...),
so this module restates, field for field, the models of MemOS's
``src/memos/memories/textual/item.py`` (``SourceMessage``, ``ArchivedTextualMemory``,
``TextualMemoryMetadata``, ``TreeNodeTextualMemoryMetadata``, ``TextualMemoryItem`` with its id
check and its choice of metadata class), written from reading that file. It is what
``to_memos_dict()`` is validated against, and what MemOS items are made of in the tests."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MEMORY_TYPES = Literal[
    "WorkingMemory",
    "LongTermMemory",
    "UserMemory",
    "OuterMemory",
    "ToolSchemaMemory",
    "ToolTrajectoryMemory",
    "RawFileMemory",
    "SkillMemory",
    "PreferenceMemory",
    "Context",
]


def _now() -> str:
    return datetime.now().isoformat()


class SourceMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str | None = "chat"
    role: Literal["user", "assistant", "system", "tool"] | None = None
    chat_time: str | None = None
    message_id: str | None = None
    content: str | None = None
    doc_path: str | None = None
    file_info: dict | None = None
    image_info: dict | None = None


class ArchivedTextualMemory(BaseModel):
    version: int = 1
    is_fast: bool = False
    memory: str | None = ""
    update_type: Literal["conflict", "duplicate", "extract", "unrelated", "feedback"] = "unrelated"
    archived_memory_id: str | None = None
    created_at: str | None = Field(default_factory=_now)
    timespec: dict[str, Any] | None = None
    memory_form: Literal["state", "event"] | None = None


class TextualMemoryMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    user_id: str | None = None
    session_id: str | None = None
    status: Literal["activated", "resolving", "archived", "deleted"] | None = "activated"
    is_fast: bool | None = None
    evolve_to: list[str] = Field(default_factory=list)
    version: int = 1
    history: list[ArchivedTextualMemory] = Field(default_factory=list)
    working_binding: str | None = None
    type: str | None = None
    key: str | None = None
    confidence: float | None = None
    source: Literal["conversation", "retrieved", "web", "file", "system"] | None = None
    tags: list[str] | None = None
    visibility: Literal["private", "public", "session"] | None = None
    updated_at: str | None = Field(default_factory=_now)
    info: dict | None = None
    internal_info: dict | None = None
    covered_history: Any | None = None


class TreeNodeTextualMemoryMetadata(TextualMemoryMetadata):
    memory_type: MEMORY_TYPES = "WorkingMemory"
    sources: list[SourceMessage] | None = None
    embedding: list[float] | None = None
    created_at: str | None = Field(default_factory=_now)
    usage: list[str] = Field(default_factory=list)
    background: str | None = ""
    file_ids: list[str] | None = Field(default_factory=list)

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        # MemOS infers a missing source type from the role (chat) or its absence (doc).
        if not isinstance(value, list):
            return value
        out = []
        for item in value:
            if isinstance(item, dict) and item.get("type") is None:
                item = {**item, "type": "chat" if item.get("role") else "doc"}
            out.append(item)
        return out


class TextualMemoryItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    memory: str
    metadata: TreeNodeTextualMemoryMetadata | TextualMemoryMetadata = Field(
        default_factory=TextualMemoryMetadata
    )

    @field_validator("id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        uuid.UUID(value)
        return value

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: Any) -> Any:
        # MemOS picks the tree-node metadata when any of these keys is present.
        tree = ("sources", "memory_type", "embedding", "background", "usage")
        if isinstance(value, dict):
            if any(k in value for k in tree):
                return TreeNodeTextualMemoryMetadata(**value)
            return TextualMemoryMetadata(**value)
        return value

    @classmethod
    def from_dict(cls, data: dict) -> TextualMemoryItem:
        return cls(**data)

    def to_dict(self) -> dict:
        return self.model_dump(exclude_none=True)
