"""The JSON bodies the service accepts (its OpenAPI schema comes from these).

Every string of a body (values and keys, at any depth) must be text that can be written as
UTF-8: JSON's ``\\ud800``-style escapes can make a lone surrogate, which no store, log or answer
can hold. Such a body is 422 naming the field (:func:`encodable`).

>>> encodable({"info": {"session_id": "s\\udfff"}})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: info.session_id holds a lone surrogate (\\udfff at character 1), ...
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from memreader.modes import ReadMode
from memreader.stores.base import SearchMode
from memreader.stores.filters import DEFAULT_MIN_SCORE, FILTER_NAMES, SearchFilters
from memreader.stores.paging import DEFAULT_PAGE, MAX_PAGE

__all__ = [
    "AddMemoryRequest",
    "FilterFields",
    "ForgetRequest",
    "ListQuery",
    "PinRequest",
    "ReadRequest",
    "RefineRequest",
    "RequestBody",
    "SearchRequest",
    "UpdateMemoryRequest",
    "UsedRequest",
    "encodable",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
#: How deep :func:`encodable` looks (a body nested deeper is refused: no recursion bomb).
_MAX_DEPTH = 64


def _name(where: str, key: object) -> str:
    part = str(key) if _SURROGATE.search(str(key)) is None else ascii(str(key))
    return f"{where}.{part}" if where else part


def encodable(value: Any, where: str = "", depth: int = 0) -> Any:
    """``value``, checked: every string in it (dict keys too) is valid Unicode.

    Raises:
        ValueError: a string holds a lone surrogate (names where), or the value nests more
            than 64 levels deep.
    """
    if depth > _MAX_DEPTH:
        raise ValueError(f"{where or 'the body'} nests more than {_MAX_DEPTH} levels deep")
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            raise ValueError(
                f"{where or 'the value'} holds a lone surrogate ({ascii(found.group())[1:-1]} at "
                f"character {found.start()}), which is not text: send valid Unicode"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            encodable(key, _name(where, key), depth + 1)
            encodable(item, _name(where, key), depth + 1)
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            encodable(item, f"{where}[{n}]", depth + 1)
    return value


class RequestBody(BaseModel):
    """The base of every JSON body: unknown fields are refused, and so is text that cannot be
    encoded (:func:`encodable`)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        return encodable(data)


_Body = RequestBody


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


class FilterFields(_Body):
    """A search's filters over HTTP: the fields of
    :class:`~memreader.stores.filters.SearchFilters`, with its defaults (a test keeps the two
    lists the same); checked again by ``SearchFilters`` itself, so a bad one is a 422 that
    names it."""

    types: list[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    session_id: str | None = None
    category: str | None = Field(default=None, min_length=1)
    #: The scope searched (memreader.scopes); a limited key's own scope wins (scope_walls).
    agent_id: str | None = None
    task_id: str | None = None
    include_inactive: bool = False
    #: The least relevance a hit keeps: none by default, on every surface.
    min_score: float | None = Field(default=DEFAULT_MIN_SCORE, ge=0.0, le=1.0)
    #: How much use lifts a hit (``null``: the store's).
    heat_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    mode: SearchMode = "hybrid"

    def search_filters(self, agent_id: str | None, task_id: str | None) -> SearchFilters:
        """These filters as the store takes them, in the scope the key may see.

        Raises:
            InputError: a bad value (the store's checks).
        """
        # The fields as they are (SearchFilters normalises them), not a dump of the model.
        given = {name: getattr(self, name) for name in FILTER_NAMES}
        return SearchFilters(**{**given, "agent_id": agent_id, "task_id": task_id})


class SearchRequest(FilterFields):
    """``POST /v1/memories/search``: as ``MemoryStore.search``."""

    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=10_000)
    k: int = Field(default=10, ge=1, le=1000)
    rerank: bool = Field(
        default=False,
        description="Rerank the store's best max(3k, 20) by the reader's LLM (Memory.search's "
        "rerank); each hit then has a 'rerank'. Needs an LLM (422 without one); never cached.",
    )


class ListQuery(FilterFields):
    """``GET /v1/memories``'s query: ``user_id`` (left out when the key has one user), a
    page's ``limit`` and the ``cursor`` the page before gave, and the filters that do not
    rank (``min_score``, ``heat_weight`` and ``mode`` are refused: a listing scores
    nothing)."""

    user_id: str | None = Field(default=None, min_length=1)
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, max_length=64)


class UsedRequest(_Body):
    """``POST /v1/memories:used``: the memories of ``user_id`` an agent was handed
    (``MemoryStore.mark_used``)."""

    user_id: str = Field(min_length=1)
    ids: list[str] = Field(min_length=1, max_length=1000)


class PinRequest(_Body):
    """``POST /v1/memories:pin`` and ``:unpin``: the memories of ``user_id`` the budget must
    never expire, or may again (``MemoryStore.pin``, ``unpin``)."""

    user_id: str = Field(min_length=1)
    ids: list[str] = Field(min_length=1, max_length=1000)


class AddMemoryRequest(_Body):
    """``POST /v1/memories``: one memory, as ``MemoryStore.add_memory`` (``user_id`` may be
    left out when the key has one user)."""

    text: str = Field(min_length=1, max_length=10_000)
    user_id: str | None = Field(default=None, min_length=1)
    session_id: str | None = Field(default=None, min_length=1)
    memory_type: str = "LongTermMemory"
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    valid_from: datetime | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = Field(default=None, max_length=100)
    agent_id: str | None = None
    task_id: str | None = None
    visibility: str | None = None


class UpdateMemoryRequest(_Body):
    """``PATCH /v1/memories/{id}``: its new text, as ``MemoryStore.update``."""

    text: str = Field(min_length=1, max_length=10_000)
    user_id: str | None = Field(default=None, min_length=1)
    reason: str | None = Field(default=None, max_length=200)


class ForgetRequest(_Body):
    """``POST /v1/memories:forget``: forget what one source said (exactly one of
    ``doc_path``, ``session_id``, ``message_id``, ``input_key``); ``erase``: erase what only it
    supports (irreversible) instead of expiring it."""

    user_id: str = Field(min_length=1)
    doc_path: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    input_key: str | None = None
    erase: StrictBool = False

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
