"""MemOS memory items read as memreader's: a MemOS ``TextualMemoryItem`` dict (its ``to_dict()``
or ``model_dump()``) becomes the dict memreader's :class:`~memreader.items.TextualMemoryItem`
validates. Pure dict work over :mod:`memreader.errors`, reached by
:meth:`~memreader.items.TextualMemoryItem.from_dict` through :mod:`memreader.memos.formats`.

What MemOS has and memreader has no field for is kept, never dropped: the item's other metadata
fields (``version``, ``history``, ``usage``, ``visibility``...) under ``metadata.info["memos"]
["fields"]``, each source's other keys (``index``, ``file_info``...) under ``["sources"]``, and
what provenance could not be recovered under ``["unrecovered"]`` (a MemOS source has no character
span and names no scene). A field at MemOS's own default (``version`` 1, empty ``history``,
``type`` "fact"...) carries nothing and is not kept. ``manager_user_id`` and ``project_id`` go to
``info`` itself, where :class:`memreader.memos.MemOSReader` puts them from a ``user_context``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from memreader.errors import MemOSItemError

__all__ = ["CARRIED_FIELDS", "MEMOS_ONLY_FIELDS", "from_memos_dict", "looks_like_memos"]

#: Metadata fields of MemOS's item models that memreader's metadata does not have.
MEMOS_ONLY_FIELDS = frozenset(
    {
        "type",
        "usage",
        "updated_at",
        "version",
        "history",
        "evolve_to",
        "visibility",
        "is_fast",
        "working_binding",
        "internal_info",
        "covered_history",
        "manager_user_id",
        "project_id",
        "source",
        "relativity",
        "preference_type",
        "dialog_id",
        "original_text",
        "preference",
        "mem_cube_id",
        "score",
    }
)
#: Values at MemOS's defaults (or what :mod:`memreader.memos.items_out` writes): nothing to
# keep.
_UNINFORMATIVE: dict[str, Any] = {
    "type": "fact",
    "usage": [],
    "version": 1,
    "history": [],
    "evolve_to": [],
    "internal_info": {},
}
#: Fields both models have under one name with different meanings: MemOS's ``visibility``
#: (``private``: the user's; ``public``; ``session``) is kept as a MemOS field, never read as
#: memreader's (``private``/``shared`` between an owner's tasks: :mod:`memreader.scopes`). A
#: MemOS item names no task, so every task of its owner sees it, as MemOS's ``private`` says.
_MEMOS_MEANING = frozenset({"visibility"})
#: ``info`` keys MemOS keeps as metadata fields (set from a ``user_context``).
CONTEXT_FIELDS = ("manager_user_id", "project_id")
#: The key of ``internal_info`` where :mod:`memreader.memos.items_out` keeps memreader's
# fields.
MEMREADER_KEY = "memreader"
#: memreader metadata fields MemOS has no field for, which travel in ``internal_info["memreader"]``,
#: and the value that means "unset". Only these (and ``id``, the item's own ``status`` and the
#: ``unrecovered`` notes) are read back from there: never the owner or the session, which are
#: MemOS's own fields (a dict naming another owner there is refused, not believed).
CARRIED_FIELDS: dict[str, Any] = {
    "embedding_model": None,
    "importance": None,
    "importance_reason": None,
    "valid_from": None,
    "preceding_id": None,
    "following_id": None,
    "summary_ids": [],
    "refined_from": None,
    "reconcile": None,
    "categories": [],
    # Scopes (memreader.scopes): MemOS has no task or agent, and its ``visibility`` means
    # another thing (_MEMOS_MEANING), so memreader's travel here.
    "agent_id": None,
    "task_id": None,
    "visibility": None,
}
_CARRIED_NAMES = frozenset({*CARRIED_FIELDS, "id", "status", "unrecovered"})


def looks_like_memos(data: Mapping[str, Any]) -> bool:
    """Whether the item dict ``data`` is MemOS-shaped rather than memreader's own: its metadata
    is missing or holds a MemOS-only field, a null owner, or a source without memreader's
    ``scene_index``/``message_index``."""
    metadata = data.get("metadata")
    if metadata is None:
        return "memory" in data
    if not isinstance(metadata, Mapping):
        return False
    if not MEMOS_ONLY_FIELDS.isdisjoint(metadata) or metadata.get("user_id", "") is None:
        return True
    sources = metadata.get("sources")
    if not isinstance(sources, list):
        return sources is None and "sources" in metadata
    return any(
        not isinstance(s, Mapping) or "scene_index" not in s or "message_index" not in s
        for s in sources
    )


def from_memos_dict(
    data: Mapping[str, Any], metadata_fields: frozenset[str], source_fields: frozenset[str]
) -> dict[str, Any]:
    """The memreader item dict for the MemOS item dict ``data``.

    ``metadata_fields`` and ``source_fields`` are the field names of memreader's metadata and
    source models (passed in so this module needs neither).

    Raises:
        MemOSItemError: ``memory`` is not a string, ``metadata`` or a source is not a mapping,
            or ``created_at`` is not an ISO 8601 time (the message names the field).
    """
    memory = data.get("memory")
    if not isinstance(memory, str):
        raise MemOSItemError(f"a MemOS item's memory must be a string, got {_kind(memory)}")
    if data.get("id") is not None and not isinstance(data.get("id"), str):
        raise MemOSItemError(f"a MemOS item's id must be a string, got {_kind(data.get('id'))}")
    raw = data.get("metadata") or {}
    if not isinstance(raw, Mapping):
        raise MemOSItemError(f"a MemOS item's metadata must be a mapping, got {_kind(raw)}")
    meta = dict(raw)
    _check_shapes(meta)
    internal = meta.pop("internal_info", None)
    ours: dict[str, Any] = {}
    ours_marked = False
    if internal is not None:
        internal = dict(internal)
        ours_marked = MEMREADER_KEY in internal
        ours = _carried(internal.pop(MEMREADER_KEY, None))
    unrecovered: list[str] = list(ours.pop("unrecovered", None) or [])
    info = dict(meta.get("info") or {})
    for name in CONTEXT_FIELDS:
        if meta.get(name) is not None:
            info[name] = meta.pop(name)
    fields = {
        name: value
        for name, value in meta.items()
        if (name not in metadata_fields or name in _MEMOS_MEANING)
        and not _uninformative(name, value, meta)
    }
    if internal:
        fields["internal_info"] = internal
    out: dict[str, Any] = {
        name: value
        for name, value in meta.items()
        if name in metadata_fields and name not in _MEMOS_MEANING and value is not None
    }
    for name in ("user_id", "session_id"):
        if not isinstance(meta.get(name), str):
            out[name] = ""
            unrecovered.append(f"{name}: the MemOS item names none")
    for name in ("tags", "file_ids"):
        out[name] = list(meta.get(name) or [])
    out["background"] = meta.get("background") or ""
    created = _aware_time(meta.get("created_at"), "created_at", unrecovered)
    if created is not None:
        out["created_at"] = created
    else:
        out.pop("created_at", None)
    stand_in = None if ours_marked else memory  # memreader's items keep their sources as they are
    # A memreader item's sources lost nothing: no provenance note for them.
    notes = [] if ours_marked else unrecovered
    sources, leftovers = _sources(meta.get("sources"), stand_in, source_fields, notes)
    out["sources"] = sources
    out.update({k: v for k, v in ours.items() if k != "id"})
    memos: dict[str, Any] = {}
    if fields:
        memos["fields"] = fields
    if any(leftovers):
        memos["sources"] = leftovers
    if memos and "memos" in info:  # the item's own info["memos"], of another shape
        unrecovered.append("info.memos: the item's own value gave way to what MemOS kept")
    if unrecovered:
        memos["unrecovered"] = list(dict.fromkeys(unrecovered))
    if memos:
        info["memos"] = memos
    out["info"] = info
    item_id = ours.get("id", data.get("id"))
    return {"id": str(item_id) if item_id is not None else "", "memory": memory, "metadata": out}


#: Metadata fields whose shape is checked before reading: a mapping, or a list (``None``: unset).
_MAPPINGS = ("info", "internal_info")
_LISTS = ("tags", "file_ids")


def _check_shapes(meta: Mapping[str, Any]) -> None:
    """Refuse the fields this module reads whose shape is not MemOS's (a typed error naming
    the field, not a ``TypeError`` from deep inside)."""
    for name in _MAPPINGS:
        if meta.get(name) is not None and not isinstance(meta[name], Mapping):
            raise MemOSItemError(
                f"a MemOS item's {name} must be a mapping, got {_kind(meta[name])}"
            )
    for name in _LISTS:
        value = meta.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise MemOSItemError(f"a MemOS item's {name} must be a list of strings")
    if meta.get("background") is not None and not isinstance(meta["background"], str):
        raise MemOSItemError(
            f"a MemOS item's background must be a string, got {_kind(meta['background'])}"
        )


def _carried(value: Any) -> dict[str, Any]:
    """What ``internal_info["memreader"]`` carries (:data:`CARRIED_FIELDS`), checked: a field
    it cannot carry (the owner, the session...) is refused, never read as the item's."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MemOSItemError(
            f"a MemOS item's internal_info.{MEMREADER_KEY} must be a mapping, got {_kind(value)}"
        )
    stray = sorted(str(name) for name in value if name not in _CARRIED_NAMES)
    if stray:
        raise MemOSItemError(
            f"a MemOS item's internal_info.{MEMREADER_KEY} holds {stray[0][:60]!r}, which is "
            "not a field memreader carries there (the owner and session are the item's own "
            "user_id and session_id)"
        )
    notes = value.get("unrecovered")
    if notes is not None and not (
        isinstance(notes, list) and all(isinstance(n, str) for n in notes)
    ):
        raise MemOSItemError(
            f"a MemOS item's internal_info.{MEMREADER_KEY}.unrecovered must be a list of strings"
        )
    if value.get("id") is not None and not isinstance(value["id"], str):
        raise MemOSItemError(
            f"a MemOS item's internal_info.{MEMREADER_KEY}.id must be a string, got "
            f"{_kind(value['id'])}"
        )
    return dict(value)


def _uninformative(name: str, value: Any, meta: Mapping[str, Any]) -> bool:
    if value is None or name in CONTEXT_FIELDS:
        return True
    if name == "is_fast":
        return bool(value) == ("mode:fast" in (meta.get("tags") or []))
    if name == "updated_at":
        return bool(value == meta.get("created_at"))
    return name in _UNINFORMATIVE and bool(value == _UNINFORMATIVE[name])


def _aware_time(value: Any, name: str, unrecovered: list[str]) -> str | None:
    """An ISO time with a zone (a naive one read as UTC, and noted), or ``None`` (now)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise MemOSItemError(
                f"a MemOS item's {name} {value[:40]!r} is not an ISO 8601 time"
            ) from None
    else:
        raise MemOSItemError(
            f"a MemOS item's {name} must be an ISO 8601 string, got {_kind(value)}"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
        unrecovered.append(f"{name}: the MemOS time has no zone; read as UTC")
    return moment.isoformat()


def _sources(
    raw: Any, memory: str | None, source_fields: frozenset[str], unrecovered: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """memreader's sources for MemOS's, and each one's keys memreader has no field for;
    ``memory`` (unless ``None``) stands as the one source when no source holds text."""
    if isinstance(raw, str):  # MemOS coerces a bare string into one doc source
        raw = [raw]
    if raw is not None and not isinstance(raw, list):
        raise MemOSItemError(f"a MemOS item's sources must be a list, got {_kind(raw)}")
    sources: list[dict[str, Any]] = []
    leftovers: list[dict[str, Any]] = []
    notes: set[str] = set()
    for position, source in enumerate(raw or []):
        if isinstance(source, str):
            source = {"type": "doc", "content": source}
        if not isinstance(source, Mapping):
            raise MemOSItemError(f"source {position} of a MemOS item must be a mapping")
        ours = {k: v for k, v in source.items() if k in source_fields and v is not None}
        if source.get("memreader_role") is not None:  # a role MemOS has not (items_out)
            ours["role"] = source["memreader_role"]
        if "scene_index" not in source or "message_index" not in source:
            index = source.get("index")
            ours.setdefault("scene_index", 0)
            notes.add("scene_index: MemOS sources name no scene; 0 assumed")
            if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
                ours.setdefault("message_index", index)
            else:
                ours.setdefault("message_index", position)
                notes.add("message_index: a source without an index is numbered by its position")
        if "span" not in source:
            notes.add("span: a MemOS source has no character span")
        if ours.get("type") is None:
            ours["type"] = "chat" if source.get("role") else "doc"
        content = source.get("content")
        if content is not None and not isinstance(content, str):
            raise MemOSItemError(
                f"source {position} of a MemOS item: content must be a string, got {_kind(content)}"
            )
        ours["content"] = content or ""
        sources.append(ours)
        leftovers.append(
            {
                k: v
                for k, v in source.items()
                if k not in source_fields
                and k != "memreader_role"
                and v is not None
                and not _index_only(k, v, ours)
            }
        )
    if memory is not None and not any(s["content"] for s in sources):
        # Refinement reads the sources; MemOS's reads the memory text, which then stands in.
        kind = sources[0]["type"] if sources else "chat"
        sources = [{"type": kind, "scene_index": 0, "message_index": 0, "content": memory}]
        leftovers = [{}]
        notes.add("sources: none held text; the item's memory text stands as its one source")
    unrecovered.extend(sorted(notes))
    return sources, leftovers


def _index_only(key: str, value: Any, ours: Mapping[str, Any]) -> bool:
    """Whether ``key`` is a source's ``index`` that became its ``message_index``."""
    return key == "index" and value == ours.get("message_index")


def _kind(value: Any) -> str:
    return type(value).__name__
