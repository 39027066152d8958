"""How a LangGraph item is kept as a memreader memory, and read back as an ``Item``.

One key of one namespace is one memory of the namespace's user
(:mod:`~memreader.integrations.langgraph.owners`):

- its **text** is the value's indexed text (:func:`~.values.indexed_text`), what
  ``Memory.search`` and ``Memory.context`` rank and show, so what a graph puts is found by
  every face of memreader;
- its **session** is the namespace (``langgraph:["memories","ana"]``: :func:`namespace_session`):
  ``get_all(filters={"session_id": ...})`` lists a namespace, and ``forget("session:...")``
  forgets it;
- its **task** is the key (:func:`key_task`, a digest): a private scope of its own, so two keys
  holding the same text stay two memories (memreader merges equal texts within a scope), and
  a task-scoped search (an MCP client with ``task_id``) does not see the store's items; the
  owner-wide search, ``Memory.search``'s default, does;
- its **metadata** (``item.metadata.info["langgraph"]``) keeps the namespace, key, the value
  exactly, its ``index``, its times, the memory it replaced, and the LangGraph run that put it
  (``thread_id``, ``checkpoint_ns``, ``run_id``: where it came from).

Read back, an item is a :class:`MemReaderItem` (or :class:`MemReaderSearchItem`): LangGraph's
``Item`` with ``memory_id`` and ``provenance`` (the memory as memreader's MCP tools show it:
its id, session, status, times, sources and, here, the run that wrote it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config
from langgraph.store.base import Item, SearchItem

from memreader.answers.shapes import memory_json
from memreader.stores.records import StoredMemory

__all__ = [
    "INFO_KEY",
    "SESSION_PREFIX",
    "MemReaderItem",
    "MemReaderSearchItem",
    "item_of",
    "key_task",
    "namespace_session",
    "put_info",
    "stored_entry",
]

#: Where a memory keeps what LangGraph put (``item.metadata.info[INFO_KEY]``).
INFO_KEY = "langgraph"
#: How the sessions of the store's namespaces begin.
SESSION_PREFIX = "langgraph:"
#: What of the run a put records (the runnable config's ``configurable`` keys).
_RUN_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")


class MemReaderItem(Item):
    """LangGraph's ``Item``, with the memory that holds it: ``memory_id`` (for
    ``Memory.history``, ``Memory.get``) and ``provenance`` (a dict: the memory's ``id``,
    ``session_id``, ``status``, ``recorded_at``, ``sources`` and the ``written_by`` run)."""

    __slots__ = ("memory_id", "provenance")

    memory_id: str
    provenance: dict[str, Any]


class MemReaderSearchItem(SearchItem):
    """LangGraph's ``SearchItem`` with ``memory_id`` and ``provenance`` (see
    :class:`MemReaderItem`); ``score`` is memreader's, in [0, 1] (``None`` without a query)."""

    __slots__ = ("memory_id", "provenance")

    memory_id: str
    provenance: dict[str, Any]


def namespace_session(namespace: Sequence[str]) -> str:
    """The session of a namespace's memories.

    >>> namespace_session(("memories", "ana"))
    'langgraph:["memories","ana"]'
    """
    return SESSION_PREFIX + json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def key_task(namespace: Sequence[str], key: str) -> str:
    """The task scope of one key: a digest, since a task id is short and a key need not be."""
    joined = json.dumps([list(namespace), key], ensure_ascii=False)
    return "langgraph-key:" + hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()


def _run() -> dict[str, str]:
    """The LangGraph run this put happens in (``{}`` outside one): its provenance."""
    config = var_child_runnable_config.get() or {}
    configurable = config.get("configurable") or {}
    run = {key: configurable.get(key) for key in _RUN_KEYS}
    run["run_id"] = config.get("run_id")
    return {key: str(value) for key, value in run.items() if value not in (None, "")}


def put_info(
    namespace: Sequence[str],
    key: str,
    value: dict[str, Any],
    index: tuple[str, ...] | bool,
    now: datetime,
    previous: Mapping[str, Any] | None,
    previous_id: str | None,
) -> dict[str, Any]:
    """The metadata of a put's memory: what it holds, since when, what it replaced and who
    wrote it."""
    created = previous["created_at"] if previous else now.isoformat()
    entry = {
        "namespace": list(namespace),
        "key": key,
        "value": value,
        "index": list(index) if isinstance(index, tuple) else index,
        "created_at": created,
        "updated_at": now.isoformat(),
        "replaces": previous_id,
        "written_by": _run(),
    }
    return {INFO_KEY: {name: shown for name, shown in entry.items() if shown is not None}}


def stored_entry(memory: StoredMemory) -> dict[str, Any] | None:
    """What LangGraph put in ``memory`` (``None``: the memory is not a store item, e.g. one
    read from a chat by ``Memory.add``)."""
    entry = memory.item.metadata.info.get(INFO_KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("value"), dict):
        return None
    namespace, key = entry.get("namespace"), entry.get("key")
    if not isinstance(namespace, list) or not isinstance(key, str):
        return None
    return entry


def item_of(memory: StoredMemory, score: float | None = None, *, ranked: bool = False) -> Item:
    """The LangGraph item ``memory`` holds (it is a store item: see :func:`stored_entry`);
    ``ranked``: a search result, with ``score``."""
    entry = stored_entry(memory)
    assert entry is not None, "item_of() takes a store item"
    fields: dict[str, Any] = {
        "namespace": tuple(entry["namespace"]),
        "key": entry["key"],
        "value": entry["value"],
        "created_at": datetime.fromisoformat(entry["created_at"]),
        "updated_at": datetime.fromisoformat(entry["updated_at"]),
    }
    made: MemReaderItem | MemReaderSearchItem
    made = MemReaderSearchItem(**fields, score=score) if ranked else MemReaderItem(**fields)
    made.memory_id = memory.id
    made.provenance = {**memory_json(memory), "written_by": dict(entry.get("written_by") or {})}
    return made
