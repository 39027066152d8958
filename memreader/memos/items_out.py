"""memreader items written in MemOS's shape: the dict MemOS's own
``TextualMemoryItem.from_dict`` accepts (its tree-node metadata), from
:meth:`memreader.items.TextualMemoryItem.to_memos_dict` or, with a store's lifecycle, from
:func:`stored_to_memos_dict`.

Nothing is lost on the way: memreader's fields MemOS has no field for (``embedding_model``,
``importance``, ``valid_from``, ``refined_from``...) go to ``internal_info["memreader"]``; each
source keeps its exact provenance as extra keys (``scene_index``, ``message_index``, ``span``...;
MemOS sources allow extras) beside MemOS's ``index``; what :mod:`memreader.memos.items_in` kept
of a MemOS item comes back as it was. So ``TextualMemoryItem.from_dict(item.to_memos_dict())``
gives ``item`` back.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Set
from typing import Any

from memreader.memos.items_in import CARRIED_FIELDS, CONTEXT_FIELDS, MEMREADER_KEY

__all__ = ["MEMOS_STATUSES", "memos_dict"]

#: The statuses MemOS's metadata accepts.
MEMOS_STATUSES = frozenset({"activated", "resolving", "archived", "deleted"})
#: MemOS's source roles; memreader's others are written as the nearest and kept beside.
_ROLES = {"developer": "system", "function": "tool"}
_MEMOS_ROLES = frozenset({"user", "assistant", "system", "tool"})
#: MemOS fields of a stored item that say where it is in its own lifecycle: a refined item is
#: a new memory, so it does not inherit them from the item it was refined from.
_LIFECYCLE_FIELDS = frozenset(
    {"version", "history", "evolve_to", "usage", "updated_at", "is_fast", "working_binding"}
)
_SOURCE_CORE = ("type", "role", "chat_time", "message_id", "content", "doc_path")
#: Kept MemOS fields that are not memreader's: :mod:`~memreader.memos.items_in` keeps only
#: these in ``info["memos"]["fields"]`` (``visibility`` in MemOS's meaning among them).
_MEMOS_MEANING = frozenset({"visibility"})


def memos_dict(data: Mapping[str, Any], status: str | None = None) -> dict[str, Any]:
    """The MemOS item dict of the memreader item dict ``data`` (``item.to_dict()``);
    ``status`` (a MemOS status) replaces the item's own."""
    meta = dict(data["metadata"])
    info = dict(meta.get("info") or {})
    # Only MemOS's own fields come back from what was kept: never one memreader writes from the
    # item itself (the owner, the session, the sources...), whoever put it in ``info``.
    own = {*meta, *CARRIED_FIELDS, *CONTEXT_FIELDS} - _MEMOS_MEANING
    provenance = {"index", "memreader_role", *(k for s in meta.get("sources", []) for k in s)}
    memos = _kept(info, own, provenance)
    kept = dict(memos.get("fields", {}))
    if meta.get("refined_from") is not None:
        kept = {k: v for k, v in kept.items() if k not in _LIFECYCLE_FIELDS}
    ours = {k: meta[k] for k, unset in CARRIED_FIELDS.items() if meta.get(k, unset) != unset}
    if memos.get("unrecovered"):
        ours["unrecovered"] = memos["unrecovered"]
    own_status = meta.get("status", "activated")
    emitted = status or (own_status if own_status in MEMOS_STATUSES else "activated")
    if emitted != own_status:
        ours["status"] = own_status
    item_id = str(data["id"])
    try:
        uuid.UUID(item_id)
    except ValueError:  # MemOS ids are UUIDs: a stable one stands in, the original is kept
        ours["id"] = item_id
        item_id = str(uuid.uuid5(uuid.NAMESPACE_URL, "memreader:" + item_id))
    internal = dict(kept.pop("internal_info", None) or {})
    internal[MEMREADER_KEY] = ours  # also marks the item as memreader's (items_in reads it so)
    leftovers = list(memos.get("sources") or [])
    out: dict[str, Any] = {
        "user_id": meta["user_id"],
        "session_id": meta["session_id"],
        "status": emitted,
        "is_fast": "mode:fast" in meta.get("tags", []),
        "type": "fact",
        "key": meta.get("key"),
        "confidence": meta.get("confidence"),
        "tags": list(meta.get("tags", [])),
        "memory_type": meta.get("memory_type", "LongTermMemory"),
        "sources": [
            _source(s, leftovers[k] if k < len(leftovers) else {})
            for k, s in enumerate(meta.get("sources", []))
        ],
        "embedding": meta.get("embedding"),
        "created_at": meta.get("created_at"),
        "updated_at": meta.get("created_at"),
        "usage": [],
        "background": meta.get("background", ""),
        "file_ids": list(meta.get("file_ids", [])),
        "info": {k: v for k, v in info.items() if k not in CONTEXT_FIELDS},
        **{k: info[k] for k in CONTEXT_FIELDS if info.get(k) is not None},
        **kept,
    }
    out["internal_info"] = internal
    return {"id": item_id, "memory": data["memory"], "metadata": out}


def _kept(info: dict[str, Any], own: Set[str], provenance: Set[str]) -> dict[str, Any]:
    """What :mod:`~memreader.memos.items_in` kept of a MemOS item, taken out of ``info``:
    ``info["memos"]`` when it has the shape that module writes (``fields``: MemOS's fields, none
    of ``own``, memreader's, with ``internal_info`` a mapping; ``sources``: mappings naming none
    of ``provenance``; ``unrecovered``: strings). A value of any other shape is not that (a
    caller's ``metadata={"memos": ...}``): it stays in ``info``, the caller's own, written as it
    is and read back so, and stands in for nothing of the item's."""
    value = info.get("memos")
    if not isinstance(value, Mapping) or not set(value) <= {"fields", "sources", "unrecovered"}:
        return {}
    fields = value.get("fields", {})
    sources = value.get("sources", [])
    notes = value.get("unrecovered", [])
    ours = (
        isinstance(fields, Mapping)
        and own.isdisjoint(fields)
        and isinstance(fields.get("internal_info", {}), Mapping)
        and isinstance(sources, list)
        and all(isinstance(s, Mapping) and provenance.isdisjoint(s) for s in sources)
        and isinstance(notes, list)
        and all(isinstance(n, str) for n in notes)
    )
    if not ours:
        return {}
    del info["memos"]
    return {"fields": dict(fields), "sources": sources, "unrecovered": notes}


def _source(source: Mapping[str, Any], leftover: Mapping[str, Any]) -> dict[str, Any]:
    """A MemOS source: its own fields, ``index`` (the message), and memreader's provenance
    and whatever a MemOS item had beside them as extra keys."""
    out = {k: source[k] for k in _SOURCE_CORE if source.get(k) is not None}
    role = source.get("role")
    if role is not None and role not in _MEMOS_ROLES:
        out["role"] = _ROLES.get(role, "user")
        out["memreader_role"] = role
    out["index"] = source.get("message_index")
    for key, value in source.items():
        if key not in _SOURCE_CORE and value not in (None, []):
            out[key] = value
    out.update({k: v for k, v in leftover.items() if k not in out})
    return out
