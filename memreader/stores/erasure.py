"""Erasure, the same in every store: the list of every place a memory's text can live, what
erasing it does in each, and the :class:`EraseReceipt` every surface hands back.

A memory's text lives in (:data:`ERASED_PLACES`, removed with it, in one transaction):

- ``memories``: its row (text, item JSON with its sources' verbatim ``content``, vector);
- ``text_index``: its full-text entry (SQLite's FTS5 row; PostgreSQL's ``tsvector`` column);
- ``passages``: its passages' spans and vectors; ``keys``: its support keys;
- ``history``: its own history rows; ``category_links``; ``use_records``; ``pins``.

and is rewritten (:data:`REWRITTEN_PLACES`) where other rows quote it:

- ``neighbour_history``: the history of the memories it replaced (their ``new_memory``) and of
  the one that replaced it (its ``old_memory``) lose the text;
- ``successor_sources``: a memory made from it by ``update()`` (and each later version) keeps
  its support keys but no longer the sources it inherited, whose ``content`` is the message
  verbatim (:func:`strip_sources`);
- ``category_summaries``: every line of the owner's category summaries that cites it or
  quotes its text is removed (:func:`scrub_summary`), in the same transaction; the keeper may
  rewrite the summary afterwards.

Forgetting a source (``forget``) walks the same list for each memory only that source
supports when it erases (``erase=True``); the memories it keeps lose the source's supports
(``sources``) and, when their session was the forgotten one, take a session they still have
(``session_moved``: ``context()`` then names a session that said it).

What stays at the file level is each backend's to say (the receipt's ``file_steps`` and
``residue``): see :class:`~memreader.stores.sqlite.store.SQLiteStore` and
:class:`~memreader.stores.postgres.store.PostgresStore`.

>>> scrub_summary("- Ana likes tea [ref:a]\\n- Ana lives in Porto [ref:b]", "b", "Porto")
'- Ana likes tea [ref:a]'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, overload

from memreader.stores.events import WriteEvent
from memreader.stores.write_decisions import Support

__all__ = [
    "ERASED_PLACES",
    "REWRITTEN_PLACES",
    "EraseReceipt",
    "Tally",
    "scrub_summary",
    "session_after",
    "strip_sources",
]

#: Where a memory's text is removed from when it is erased (counted in ``removed``; a
#: ``Memory``'s erasing forget adds ``transcripts``: :mod:`memreader.front.transcripts`).
ERASED_PLACES = (
    "memories",
    "text_index",
    "passages",
    "keys",
    "history",
    "category_links",
    "use_records",
    "pins",
)
#: Where other rows that quote an erased memory's text are rewritten (counted in
#: ``rewritten``); ``sources`` and ``session_moved`` are a forget's; ``markdown_exports`` the
#: user folders a ``Memory`` exported and wrote again (:mod:`memreader.front.removal`).
REWRITTEN_PLACES = (
    "neighbour_history",
    "successor_sources",
    "category_summaries",
    "sources",
    "session_moved",
    "markdown_exports",
)

#: The shortest text a summary line is checked to quote (shorter: a citation only).
_QUOTE_CHARS = 12


@dataclass(frozen=True, eq=False)
class EraseReceipt(Sequence[WriteEvent]):
    """What an erasure (``delete(erase=True)``) or a forget removed, from where, and what may
    remain: one value from the store, the same on every surface (:meth:`to_dict` is its JSON
    form on HTTP, MCP and the CLI's ``--json``).

    - ``target``: what was asked (``memory:ID``, or the source key such as ``session:s1``);
      ``erased``: the memories removed for good; ``expired``: those a forget without
      ``erase`` retired (their rows and history stay); ``reduced``: those that lost the
      source's sources but stay, supported by others;
    - ``removed``: rows removed per place (:data:`ERASED_PLACES`); ``rewritten``: rows
      rewritten per place (:data:`REWRITTEN_PLACES`); ``categories``: the summaries rewritten;
    - ``file_steps``: what the backend did at the file level (SQLite: ``secure_delete``, FTS5
      ``optimize``, the WAL checkpoint and whether it truncated); ``residue``: where bytes may
      remain, said plainly (PostgreSQL: dead tuples, WAL, backups);
    - ``events``: the call's :class:`~memreader.stores.events.WriteEvent` list. A receipt
      iterates over them, so code written for a list of events reads it unchanged.

    >>> r = EraseReceipt(user_id="u1", target="memory:a", erased=("a",))
    >>> r.to_dict()["erased"], len(r), r == []
    (['a'], 0, True)
    """

    user_id: str
    target: str
    erased: tuple[str, ...] = ()
    expired: tuple[str, ...] = ()
    reduced: tuple[str, ...] = ()
    removed: Mapping[str, int] = field(default_factory=dict)
    rewritten: Mapping[str, int] = field(default_factory=dict)
    categories: tuple[str, ...] = ()
    file_steps: tuple[str, ...] = ()
    residue: tuple[str, ...] = ()
    events: tuple[WriteEvent, ...] = ()

    def __eq__(self, other: object) -> bool:
        # A list or tuple of events equals the receipt holding them (code written when forget
        # returned a list compares it so); another receipt, field by field.
        if isinstance(other, (list, tuple)):
            return list(self.events) == list(other)
        if not isinstance(other, EraseReceipt):
            return NotImplemented
        return [getattr(self, f.name) for f in fields(self)] == [
            getattr(other, f.name) for f in fields(other)
        ]

    __hash__ = None  # type: ignore[assignment]  # it holds dicts

    def __iter__(self) -> Iterator[WriteEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @overload
    def __getitem__(self, index: int) -> WriteEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[WriteEvent]: ...

    def __getitem__(self, index: int | slice) -> WriteEvent | Sequence[WriteEvent]:
        return self.events[index]

    def to_dict(self, *, events: bool = True, limit: int | None = None) -> dict[str, Any]:
        """The receipt as JSON-ready data: its events (``events``) as ``event``,
        ``memory_id`` and ``reason``; with ``limit``, each list of ids holds at most that many
        (``erased_total``, ``expired_total`` and ``reduced_total`` say how many there are).

        >>> EraseReceipt("u1", "session:s1", erased=("a", "b")).to_dict(limit=1)["erased"]
        ['a']
        """
        shown: dict[str, Any] = {"user_id": self.user_id, "target": self.target}
        for name in ("erased", "expired", "reduced"):
            ids: tuple[str, ...] = getattr(self, name)
            shown[name] = list(ids if limit is None else ids[:limit])
            shown[f"{name}_total"] = len(ids)
        shown.update(
            removed=dict(self.removed),
            rewritten=dict(self.rewritten),
            categories=list(self.categories),
            file_steps=list(self.file_steps),
            residue=list(self.residue),
        )
        if events:
            shown["events"] = [
                {"event": e.event, "memory_id": e.memory_id, "reason": e.reason}
                for e in self.events
            ]
        return shown


@dataclass
class Tally:
    """What one transaction removed and rewrote, counted as it goes (a store's ``Changes``
    holds one; :meth:`receipt` makes the :class:`EraseReceipt`)."""

    removed: Counter[str] = field(default_factory=Counter)
    rewritten: Counter[str] = field(default_factory=Counter)
    erased: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    reduced: list[str] = field(default_factory=list)
    categories: set[str] = field(default_factory=set)
    file_steps: list[str] = field(default_factory=list)

    def count(self, place: str, rows: int) -> None:
        """``rows`` removed from ``place`` (a negative rowcount, unknown, counts none)."""
        if rows > 0:
            self.removed[place] += rows

    def receipt(
        self,
        user_id: str,
        target: str,
        events: Sequence[WriteEvent],
        residue: Sequence[str] = (),
    ) -> EraseReceipt:
        """The receipt of this tally."""
        return EraseReceipt(
            user_id=user_id,
            target=target,
            erased=tuple(self.erased),
            expired=tuple(self.expired),
            reduced=tuple(self.reduced),
            removed={k: self.removed[k] for k in ERASED_PLACES if self.removed[k]},
            rewritten={k: self.rewritten[k] for k in REWRITTEN_PLACES if self.rewritten[k]},
            categories=tuple(sorted(self.categories)),
            file_steps=tuple(self.file_steps),
            residue=tuple(residue) if self.erased else (),
            events=tuple(events),
        )


def scrub_summary(summary: str, memory_id: str, text: str) -> str | None:
    """``summary`` without its lines that cite ``memory_id`` or quote ``text`` (a sentence
    citing it states what it said, whatever else it cites); ``None`` when nothing changes.

    >>> scrub_summary("- Tea [ref:a][ref:b]", "b", "x") == ""
    True
    >>> scrub_summary("- Tea [ref:a]", "b", "x") is None
    True
    """
    quote = " ".join(text.split()).casefold() if len(text.strip()) >= _QUOTE_CHARS else None
    lines = summary.splitlines()
    kept = [
        line
        for line in lines
        if f"[ref:{memory_id}]" not in line
        and not (quote and quote in " ".join(line.split()).casefold())
    ]
    return None if len(kept) == len(lines) else "\n".join(kept)


def strip_sources(
    supports: Sequence[Support], erased: Sequence[Support]
) -> tuple[list[Support], int]:
    """``supports`` (a successor's) without the source messages of ``erased`` (the erased
    memory's): a support holding one keeps its keys (a later forget still finds the memory)
    but not the message; also how many were stripped."""
    gone = [s.source for s in erased if s.source is not None]
    out: list[Support] = []
    stripped = 0
    for support in supports:
        if support.source is not None and support.source in gone:
            out.append(Support(support.keys, None))
            stripped += 1
        else:
            out.append(support)
    return out, stripped


def session_after(session: str, kept: Sequence[Support]) -> str:
    """The session a memory is filed under once it keeps only the supports ``kept``: its own
    ``session`` while one of them still names it, else the first session they name.

    >>> session_after("s1", [Support(("session:s2", "message:m9"))])
    's2'
    >>> session_after("s1", [Support(("session:s2",)), Support(("session:s1",))])
    's1'
    """
    named = [k[len("session:") :] for s in kept for k in s.keys if k.startswith("session:")]
    if not named or session in named:
        return session
    return named[0]
