"""The JSON bodies the service accepts (its OpenAPI schema comes from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memreader.modes import ReadMode
from memreader.stores.base import SearchMode

__all__ = ["ForgetRequest", "ReadRequest", "RefineRequest", "SearchRequest"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadRequest(_Body):
    """``POST /v1/read``: what ``get_memory`` takes, and whether to store the items.

    ``scenes``: a list of scenes (chat: lists of messages; doc: documents), as ``scene_data``.
    ``info``: ``user_id`` and ``session_id`` (strings) and any other keys, kept on each item.
    ``store``: also write the items to the service's store (the answer lists the events).
    ``include_embeddings``: the items' vectors in the answer (384 floats each, on by default
    as in ``get_memory``).
    """

    scenes: Any
    type: Literal["chat", "doc"] = "chat"
    info: dict[str, Any]
    mode: ReadMode = "fast"
    custom_tags: list[str] | None = None
    store: bool = False
    include_embeddings: bool = True


class SearchRequest(_Body):
    """``POST /v1/memories/search``: as ``MemoryStore.search``."""

    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=10_000)
    k: int = Field(default=10, ge=1, le=1000)
    mode: SearchMode = "hybrid"
    types: list[str] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_inactive: bool = False


class ForgetRequest(_Body):
    """``POST /v1/memories:forget``: forget what one source said (exactly one of
    ``doc_path``, ``session_id``, ``message_id``, ``input_key``)."""

    user_id: str = Field(min_length=1)
    doc_path: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    input_key: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ForgetRequest:
        named = [self.doc_path, self.session_id, self.message_id, self.input_key]
        if sum(value is not None for value in named) != 1:
            raise ValueError(
                "name exactly one source: doc_path, session_id, message_id or input_key"
            )
        return self


class RefineRequest(_Body):
    """``POST /v1/refine``: fast items (as ``to_dict`` gives them) to refine in fine mode."""

    items: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)
    type: Literal["chat", "doc"] = "chat"
    custom_tags: list[str] | None = None
    store: bool = False
    include_embeddings: bool = True
