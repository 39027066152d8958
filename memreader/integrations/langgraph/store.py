"""memreader as LangGraph's long-term memory store: :class:`MemReaderStore`, a
``langgraph.store.base.BaseStore`` over a :class:`~memreader.front.memory.Memory`, so a graph
compiled with ``store=MemReaderStore(...)`` (and LangMem's tools, which take a store) keep
their items as memreader memories::

    from langgraph.graph import StateGraph
    from memreader import Memory
    from memreader.integrations.langgraph import MemReaderStore

    memory = Memory(store="sqlite:///memories.db")
    store = MemReaderStore(memory, user_label=1, users=["ana"])  # ("memories", "ana") is Ana's
    graph = builder.compile(store=store)

A key is one memory (:mod:`~memreader.integrations.langgraph.records` says how), whose user
the namespace decides (:mod:`~memreader.integrations.langgraph.owners`: the wall). ``put``
of an existing key expires the memory that held it and writes the new value as a new one
(``Memory.update`` keeps the old metadata, where the value lives); the old stays, expired,
with its history, and the new one's ``replaces`` names it. ``delete`` expires; nothing is
erased (``Memory.delete(..., erase=True)`` does that). A query search ranks with memreader's
hybrid search; ``filter`` takes LangGraph's operators. Not supported: TTLs (``ttl=`` raises
``NotImplementedError``, as LangGraph's stores without them do), and LangGraph's own
embedding config (memreader's embedder embeds: ``index`` takes only ``fields``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
    validate_op_namespace,
)

from memreader.calls.deadlines import in_thread
from memreader.errors import InputError
from memreader.front.async_memory import AsyncMemory
from memreader.front.memory import Memory
from memreader.integrations.langgraph.finding import find_key, namespaces_of, search_items
from memreader.integrations.langgraph.owners import WILDCARD, Owners
from memreader.integrations.langgraph.records import (
    item_of,
    key_task,
    namespace_session,
    put_info,
    stored_entry,
)
from memreader.integrations.langgraph.values import (
    WHOLE_VALUE,
    checked_index,
    checked_value,
    indexed_text,
    json_text,
)
from memreader.stores import WriteEvent
from memreader.stores.write_decisions import content_hash

__all__ = ["MemReaderStore"]


class MemReaderStore(BaseStore):
    """A LangGraph store whose items are memreader memories (see the module docstring).

    Args:
        memory: the ``Memory`` (or ``AsyncMemory``) it reads and writes; the caller closes it.
        user_id: the one user whose memories every namespace is in.
        user_label: instead, the namespace position that names the user (``1`` for
            ``("memories", user_id)``), with ``users`` (the users served) or ``any_user=True``.
        index: LangGraph's index config, its ``fields`` only (the paths whose text is
            ranked; default ``["$"]``, the whole value as JSON).

    >>> from memreader import Memory
    >>> memory = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
    >>> store = MemReaderStore(memory, user_id="ana", index={"fields": ["text"]})
    >>> store.put(("notes",), "tea", {"text": "Ana drinks green tea", "stars": 5})
    >>> store.get(("notes",), "tea").value
    {'text': 'Ana drinks green tea', 'stars': 5}
    >>> [item.key for item in store.search(("notes",), query="tea")]
    ['tea']

    Raises:
        InputError: a bad binding (see :meth:`Owners.of`) or ``index``.
    """

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        user_id: str | None = None,
        user_label: int | None = None,
        users: Collection[str] | None = None,
        any_user: bool = False,
        index: Mapping[str, Any] | None = None,
    ) -> None:
        self.memory = memory.memory if isinstance(memory, AsyncMemory) else memory
        if not isinstance(self.memory, Memory):
            raise InputError(f"MemReaderStore needs a Memory, got {type(memory).__name__}")
        self.owners = Owners.of(
            user_id=user_id, user_label=user_label, users=users, any_user=any_user
        )
        self.fields = _fields(index)

    # -- LangGraph's two entry points ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, each seeing the ones before; every op is checked first, so
        bad input fails the batch before anything is written.

        Raises:
            InvalidNamespaceError: a bad namespace, or one naming a user not served.
            InputError: a bad value, index, filter or key.
            NotImplementedError: a put with a TTL.
        """
        listed = list(ops)
        for op in listed:
            _check(op)
        return [self._run(op) for op in listed]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (a cancelled caller waits for it to end)."""
        return await in_thread(self.batch, list(ops))

    # -- one op each ---------------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, (GetOp, PutOp)) and not op.namespace:
            return None  # no item is ever put there (put refuses it): nothing to get or delete
        if isinstance(op, GetOp):
            found = find_key(self.memory, self.owners.owner(op.namespace), op.namespace, op.key)
            return item_of(found) if found is not None else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return search_items(self.memory, self.owners.owners_under(op.namespace_prefix), op)
        return self._namespaces(op)

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        owner = self.owners.owner(namespace)
        old = find_key(self.memory, owner, namespace, key)
        if op.value is None:
            if old is not None:
                self.memory.delete(old.id, user_id=owner)
            return
        value = checked_value(op.value, "put")
        index = checked_index(op.index, "put: index")
        text = indexed_text(value, self.fields if index is True else index or WHOLE_VALUE)
        old_entry = stored_entry(old) if old is not None else None
        # memreader knows a memory by its text: the same text (once normalised) is the same row
        same_text = old is not None and content_hash(old.item.memory) == content_hash(text)
        if same_text and old_entry is not None and _unchanged(old_entry, value, index):
            return  # the same item put again: nothing changes (no new history)
        replaced = old.id if old is not None and not same_text else None
        info = put_info(
            namespace, key, value, index, datetime.now(timezone.utc), old_entry, replaced
        )
        if same_text and old is not None:  # its row takes the new value: expired, then again
            self.memory.delete(old.id, user_id=owner)
        event = self._add(text, owner, namespace, key, info)
        if replaced is None:
            return
        # The new version is written first, so a failed write leaves the old value in place;
        # one memreader took for the old version seen again (a near duplicate) is written
        # again once the old one is expired, when nothing is left to merge it into.
        self.memory.delete(replaced, user_id=owner)
        if event.memory_id == replaced:
            self._add(text, owner, namespace, key, info)

    def _add(
        self, text: str, owner: str, namespace: tuple[str, ...], key: str, info: dict[str, Any]
    ) -> WriteEvent:
        return self.memory.add_memory(
            text,
            user_id=owner,
            session_id=namespace_session(namespace),
            task_id=key_task(namespace, key),
            metadata=info,
        )

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        found: set[tuple[str, ...]] = set()
        for owner in self.owners.owners_under(prefix):
            found |= namespaces_of(self.memory, owner)
        kept = [ns for ns in found if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = [ns[: op.max_depth] for ns in kept]
        return sorted(set(kept))[op.offset : op.offset + op.limit]

    def __repr__(self) -> str:
        return f"MemReaderStore({self.memory!r}, owners={self.owners!r})"


def _fields(index: Mapping[str, Any] | None) -> tuple[str, ...]:
    if index is None:
        return WHOLE_VALUE
    if not isinstance(index, Mapping):
        raise InputError(f"index must be a mapping like {{'fields': [...]}}, got {index!r}")
    other = sorted(set(index) - {"fields"})
    if other:
        raise InputError(
            f"index takes only 'fields' here, not {other[0]!r}: memreader's embedder (the "
            "Memory's config) embeds the text, so 'dims' and 'embed' have no use"
        )
    fields = index.get("fields")
    checked = checked_index(fields, "index['fields']") if fields is not None else True
    return checked if isinstance(checked, tuple) else WHOLE_VALUE


def _unchanged(entry: Mapping[str, Any], value: dict[str, Any], index: Any) -> bool:
    """Whether a stored item ``entry`` holds ``value`` put with ``index`` already."""
    kept_index = list(index) if isinstance(index, tuple) else index
    return entry.get("index") == kept_index and json_text(entry["value"]) == json_text(value)


def _check(op: Any) -> None:
    """``op`` is one LangGraph op with a valid namespace (as ``put`` and ``get`` check them,
    for ops handed to ``batch`` directly)."""
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InputError(f"batch: unknown operation {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
        raise InputError(f"a key must be a string, got {op.key!r}")
    if isinstance(op, PutOp) and op.value is not None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        if op.ttl is not None:
            raise NotImplementedError(
                "TTL is not supported by MemReaderStore: memories expire by delete or by the "
                "Memory's budget (lifecycle), not by time"
            )
        checked_value(op.value, "put")
        checked_index(op.index, "put: index")
    if isinstance(op, (SearchOp, ListNamespacesOp)):
        for name in ("limit", "offset"):
            number = getattr(op, name)
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise InputError(f"{name} must be a non-negative integer, got {number!r}")
    if isinstance(op, ListNamespacesOp):
        depth = op.max_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise InputError(f"max_depth must be a positive integer or None, got {depth!r}")
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InputError(
                    f"list_namespaces: match type must be prefix or suffix, "
                    f"got {condition.match_type!r}"
                )
    if isinstance(op, SearchOp) and op.query is not None and not isinstance(op.query, str):
        raise InputError(f"search: query must be a string, got {type(op.query).__name__}")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` passes a prefix or suffix ``condition`` (``"*"`` any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    else:  # "suffix" (batch checked it)
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    return all(want in (WILDCARD, label) for label, want in pairs)
