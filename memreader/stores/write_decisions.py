"""Write decisions, the same in every store whatever keeps the rows (the rows they change are
:mod:`~memreader.stores.change_rules`'): the content hash dedup
compares, the source keys forgetting looks up, what a memory's support is, and what writing an
item does given what is already stored, and its reconcile decision (:func:`decide`,
:func:`reconciled`; nothing is ever deleted by one: a replaced memory is ``superseded``).

A memory's *support* is a list of :class:`Support`: one per source message it cites (or one for
the item itself when it cites none), each with the keys it can be forgotten by:

- ``session:<session_id>``: the item's session (every support has it);
- ``doc:<doc_path>`` and ``message:<message_id>``: what the source names;
- ``input:<input_key>`` (or any other key) when the item was written with ``replaces``.

>>> content_hash("  Ana lives in  PORTO. ") == content_hash("ana lives in porto")
True
>>> selector_key(SourceSelector(doc_path="notes.md"))
'doc:notes.md'
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from memreader.errors import InputError
from memreader.items import Reconciliation, TextualMemoryItem
from memreader.scopes import scope_columns, scoped_hash
from memreader.stores.checks import SourceSelector
from memreader.stores.events import EventKind, WriteEvent
from memreader.stores.records import MemoryStatus

__all__ = [
    "DEFAULT_NEAR_DUPLICATE",
    "Decision",
    "Found",
    "Support",
    "already_supported",
    "content_hash",
    "decide",
    "drop_key",
    "dump_supports",
    "load_supports",
    "looked_up",
    "memory_hash",
    "merge_supports",
    "not_applicable",
    "reconciled",
    "selector_key",
    "sources_of",
    "supports_of",
    "valid_from_of",
]

#: Cosine at or above which a new memory of the same owner, type and embedding model counts as
#: a stored one seen again. Provisional: chosen by hand for sentence embedders, where rewordings
#: of one fact score ~0.9-0.97 and different facts rarely pass 0.9; to be measured on
#: MemoryBank before it is trusted (issue 19).
DEFAULT_NEAR_DUPLICATE = 0.95

_SPACE = re.compile(r"\s+")
# Trailing sentence punctuation does not make another memory ("Ana lives in Porto." / "... Porto").
_TRAILING = ".!?;:,。！？；：，"


def content_hash(text: str) -> str:
    """The sha256 of ``text`` normalised: NFKC, case-folded, whitespace collapsed, trailing
    sentence punctuation dropped. Two memories with one hash are the same memory."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    normal = _SPACE.sub(" ", normal).strip().rstrip(_TRAILING).strip()
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def memory_hash(item: TextualMemoryItem) -> str:
    """An item's dedup key, what a store keeps as its ``content_hash``: :func:`content_hash`
    of its text, joined with its scope when it has one
    (:func:`~memreader.scopes.scoped_hash`), so two scopes never merge."""
    return scoped_hash(content_hash(item.memory), scope_columns(item.metadata))


def selector_key(selector: SourceSelector) -> str:
    """The support key a :class:`SourceSelector` names."""
    if selector.doc_path:
        return f"doc:{selector.doc_path}"
    if selector.session_id:
        return f"session:{selector.session_id}"
    if selector.message_id:
        return f"message:{selector.message_id}"
    return f"input:{selector.input_key}"


@dataclass(frozen=True)
class Support:
    """One thing a memory was read from: a source message (its JSON form), or ``None`` for an
    item that cites no source, and the keys that forget it."""

    keys: tuple[str, ...]
    source: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored with the memory."""
        return {"keys": list(self.keys), "source": self.source}


def supports_of(item: TextualMemoryItem, extra_key: str | None = None) -> list[Support]:
    """The supports ``item`` brings: one per source (one for the item if it has none)."""
    base = [f"session:{item.metadata.session_id}"]
    if extra_key and extra_key not in base:
        base.append(extra_key)
    supports = []
    for source in item.metadata.sources:
        keys = list(base)
        if source.doc_path:
            keys.append(f"doc:{source.doc_path}")
        if source.message_id:
            keys.append(f"message:{source.message_id}")
        supports.append(Support(tuple(dict.fromkeys(keys)), source.model_dump(mode="json")))
    return supports or [Support(tuple(base))]


def merge_supports(old: Sequence[Support], new: Iterable[Support]) -> list[Support]:
    """``old`` then the supports of ``new`` not already in it."""
    merged = list(old)
    for support in new:
        if support not in merged:
            merged.append(support)
    return merged


def drop_key(supports: Sequence[Support], key: str) -> tuple[list[Support], list[Support]]:
    """``supports`` split into those without ``key`` (kept) and those with it (dropped)."""
    kept = [s for s in supports if key not in s.keys]
    dropped = [s for s in supports if key in s.keys]
    return kept, dropped


def sources_of(supports: Sequence[Support]) -> list[dict[str, Any]]:
    """The source messages (JSON form) of ``supports``, in order."""
    return [s.source for s in supports if s.source is not None]


def keys_of(supports: Iterable[Support]) -> list[str]:
    """Every key of ``supports``, once each, sorted."""
    return sorted({key for s in supports for key in s.keys})


def dump_supports(supports: Sequence[Support]) -> str:
    """The JSON text a store keeps."""
    return json.dumps([s.to_json() for s in supports], ensure_ascii=False, sort_keys=True)


def load_supports(text: str) -> list[Support]:
    """Supports back from :func:`dump_supports`."""
    return [Support(tuple(d["keys"]), d.get("source")) for d in json.loads(text)]


def valid_from_of(item: TextualMemoryItem) -> datetime | None:
    """When ``item``'s fact began to hold, in UTC: its own ``metadata.valid_from`` when set
    (in fine mode the date the model resolved, e.g. "yesterday" against the message's time),
    else the earliest timestamp of its sources (when the fact was said; a naive timestamp is
    taken as UTC)."""
    if item.metadata.valid_from is not None:
        return item.metadata.valid_from.astimezone(timezone.utc)
    times = [s.timestamp for s in item.metadata.sources if s.timestamp is not None]
    if not times:
        return None
    return min(t if t.tzinfo else t.replace(tzinfo=timezone.utc) for t in times).astimezone(
        timezone.utc
    )


@dataclass(frozen=True)
class Found:
    """A stored memory a lookup found for an item."""

    memory_id: str
    content_hash: str
    status: MemoryStatus


@dataclass(frozen=True)
class Decision:
    """What writing one item does: ``event`` on ``memory_id``, and why. ``reactivate``: the
    item's own stored row, expired or superseded, becomes active again (event ``ADD``, or the
    ``UPDATE``/``SUPERSEDE`` of a reconcile decision). ``previous_id``: the stored memory a
    reconcile ``UPDATE`` or ``SUPERSEDE`` retires (``superseded``, ``superseded_by`` the item).
    ``reconciled``: a ``REINFORCE`` that applies a reconcile ``NONE``, which changes nothing
    when the target already has every source the item brings (so writing it twice is one
    reinforcement)."""

    event: EventKind
    memory_id: str
    reason: str
    reactivate: bool = False
    previous_id: str | None = None
    reconciled: bool = False


def decide(
    index: int,
    item_id: str,
    item_hash: str,
    *,
    same_id: Found | None,
    same_hash: Found | None,
    nearest: tuple[str, float] | None,
    threshold: float,
    reconcile: Reconciliation | None = None,
    target: Found | None = None,
) -> Decision:
    """What writing item ``index`` does, given what its owner already has: its own id
    (``same_id``), an active memory with its type and hash (``same_hash``), and the most
    similar active memory of its type and model (``nearest``: id and cosine).

    ``reconcile`` is the item's reconcile decision, ``target`` the stored memory of the same
    owner it names (``None`` when the owner has none by that id). The decision is applied
    (see :func:`reconciled`) unless the item is already stored active under its id (``NONE``,
    so writing decided items twice changes nothing); one that cannot be applied leaves the
    item to the rules below, its reason saying why the decision was not applied.

    Raises:
        InputError: ``item_id`` is stored with different text (ids name one memory).
    """
    if same_id is not None and same_id.content_hash != item_hash:
        raise InputError(
            f"item {index} (id {item_id!r}): a stored memory has this id with different text; "
            "an id names one memory, so give the new text a new id"
        )
    if same_id is not None and same_id.status == "active":
        return Decision("NONE", item_id, "already stored")
    note = ""
    if reconcile is not None:
        why = not_applicable(item_id, reconcile, target, same_hash)
        if why is None:
            return reconciled(item_id, reconcile, reactivate=same_id is not None)
        if reconcile.event == "ADD":
            note = f"; reconcile ADD: {reconcile.reason}" if reconcile.reason else ""
        else:
            note = f"; reconcile {reconcile.event} {reconcile.target_id} not applied: {why}"
    found = _dedup(
        item_id, same_id=same_id, same_hash=same_hash, nearest=nearest, threshold=threshold
    )
    return replace(found, reason=found.reason + note) if note else found


def _dedup(
    item_id: str,
    *,
    same_id: Found | None,
    same_hash: Found | None,
    nearest: tuple[str, float] | None,
    threshold: float,
) -> Decision:
    """The dedup rules of :func:`decide`, for an item not stored active under its id."""
    if same_hash is not None:
        return Decision(
            "REINFORCE", same_hash.memory_id, f"the same memory is stored as {same_hash.memory_id}"
        )
    if nearest is not None and nearest[1] >= threshold:
        return Decision(
            "REINFORCE",
            nearest[0],
            f"near duplicate of {nearest[0]} (cosine {nearest[1]:.3f} >= {threshold})",
        )
    if same_id is not None:
        return Decision("ADD", item_id, f"stored again (it was {same_id.status})", reactivate=True)
    return Decision("ADD", item_id, "new memory")


def not_applicable(
    item_id: str, mark: Reconciliation, target: Found | None, same_hash: Found | None
) -> str | None:
    """Why the reconcile decision ``mark`` of item ``item_id`` cannot be applied, or ``None``
    when it can: an ``ADD`` (nothing to apply), no target, the item itself as the target, a
    target that is not a stored memory of the item's owner (``target`` is ``None``: another
    owner's memory is not told apart from an unknown id) or not active, or the item's text
    already stored as an active memory (the same memory is then reinforced; a ``NONE`` naming
    that very memory is applied)."""
    if mark.event == "ADD":
        return "ADD"
    tid = mark.target_id
    if not tid:
        return "no target"
    if tid == item_id:
        return "the target is the memory itself"
    if target is None:
        return f"{tid} is not a stored memory of this owner and scope"
    if target.status != "active":
        return f"{tid} is {target.status}"
    if same_hash is not None and not (mark.event == "NONE" and same_hash.memory_id == tid):
        return f"the same memory is already stored as {same_hash.memory_id}"
    return None


def reconciled(item_id: str, mark: Reconciliation, *, reactivate: bool) -> Decision:
    """The decision that applies reconcile ``mark`` (applicable: :func:`not_applicable`).

    - ``UPDATE``: the item is stored (its memory the merged text, its sources joined by the
      target's, its ``valid_from`` the earlier of both), the target ``superseded`` by it;
    - ``SUPERSEDE``: the item is stored, the target ``superseded`` by it, the target's
      ``valid_to`` the item's ``valid_from`` (the time of writing when unknown);
    - ``NONE``: no new row; the target is reinforced with the item's sources (event
      ``REINFORCE``; ``NONE`` when it already has them all).
    """
    tid = mark.target_id
    assert tid is not None  # not_applicable() said the target is stored and active
    why = f": {mark.reason}" if mark.reason else ""
    if mark.event == "NONE":
        return Decision(
            "REINFORCE", tid, f"reconcile NONE: already stored as {tid}{why}", reconciled=True
        )
    reason = f"reconcile {mark.event} of {tid}{why}"
    return Decision(mark.event, item_id, reason, reactivate=reactivate, previous_id=tid)


def already_supported(stored: Sequence[Support], new: Iterable[Support]) -> bool:
    """Whether every support of ``new`` is among ``stored``."""
    return all(support in stored for support in new)


def looked_up(
    start: int,
    items: Sequence[TextualMemoryItem],
    hashes: Sequence[str],
    rows: Iterable[tuple[Any, ...]],
) -> list[WriteEvent | None]:
    """What writing each of ``items`` (items ``start`` on of a lookup, their content
    ``hashes``) would find among ``rows`` (id, memory type, content hash, status: the owner's
    rows with one of their ids, and its active rows with one of their hashes): ``NONE`` or
    ``REINFORCE``, else ``None`` (see :meth:`MemoryStore.lookup`)."""
    by_id: dict[str, Found] = {}
    by_hash: dict[tuple[str, str], str] = {}
    for memory_id, memory_type, digest, status in rows:
        by_id[memory_id] = Found(memory_id, digest, status)
        if status == "active":
            by_hash.setdefault((memory_type, digest), memory_id)
    found: list[WriteEvent | None] = []
    for index, (item, digest) in enumerate(zip(items, hashes, strict=True)):
        same = by_hash.get((item.metadata.memory_type.value, digest))
        try:
            decision = decide(
                start + index,
                item.id,
                digest,
                same_id=by_id.get(item.id),
                same_hash=Found(same, digest, "active") if same else None,
                nearest=None,
                threshold=1.0,
            )
        except InputError:  # the id holds other text: write() says so
            found.append(None)
            continue
        known = decision.event in ("NONE", "REINFORCE")
        event = WriteEvent(decision.event, decision.memory_id, item.id, decision.reason)
        found.append(event if known else None)
    return found
