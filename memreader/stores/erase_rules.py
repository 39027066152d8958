"""Erase rules, shared by both stores: the walk over every place a memory's text lives
(:mod:`memreader.stores.erasure`) that :meth:`EraseRules.erase_one` runs inside a write
transaction, and the summary scrub a retired memory gets (:meth:`EraseRules.scrub`). Each
store's ``Changes`` holds the SQL of each step; :class:`~memreader.stores.change_rules.ChangeRules`
calls these from ``delete_one`` and ``drop_source``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from memreader.stores.erasure import Tally, scrub_summary, strip_sources
from memreader.stores.write_decisions import Support, load_supports

__all__ = ["SCRUB_NOTE", "EraseRules", "with_session"]

#: The note a summary gets when the store took lines out of it (the keeper may rewrite it).
SCRUB_NOTE = "lines citing a memory that was erased or retired were removed by the store"


def with_session(item_text: str, session_id: str) -> str:
    """A stored item (``item_text``) filed under ``session_id``."""
    data = json.loads(item_text)
    data["metadata"]["session_id"] = session_id
    return json.dumps(data, ensure_ascii=False)


class EraseRules(ABC):
    """The erase walk of one write transaction (see the module docstring); ``tally`` counts
    what it removes and rewrites."""

    tally: Tally

    def erase_one(self, rowid: int, owner: str, memory_id: str) -> None:
        """Remove ``owner``'s memory ``memory_id`` (at ``rowid``) from every place its text
        lives: its category summaries' lines, its successors' inherited sources, its
        neighbours' history, then its own rows (see :mod:`memreader.stores.erasure`)."""
        text, successor, supports_text = self._facts(rowid)
        self.scrub(owner, memory_id, text)
        self._strip_successors(owner, successor, load_supports(supports_text))
        self._erase(rowid, owner, memory_id, text, successor)
        self.tally.erased.append(memory_id)

    def scrub(self, owner: str, memory_id: str, text: str) -> None:
        """Take out of ``owner``'s category summaries every line that cites ``memory_id`` or
        quotes ``text`` (the memory leaves: erased, expired or forgotten)."""
        for name, summary in self._summaries(owner):
            scrubbed = scrub_summary(summary, memory_id, text)
            if scrubbed is None:
                continue
            self._put_summary(owner, name, scrubbed)
            self.tally.categories.add(name)
            self.tally.rewritten["category_summaries"] += 1

    def _strip_successors(
        self, owner: str, successor: str | None, erased: Sequence[Support]
    ) -> None:
        """Each later version of the erased memory (``update()`` chains, followed through
        ``superseded_by``) loses the sources it inherited from it."""
        seen: set[str] = set()
        while successor and successor not in seen:
            seen.add(successor)
            row = self._successor(owner, successor)
            if row is None:
                return
            rowid, supports_text, item_text, successor = row
            supports, stripped = strip_sources(load_supports(supports_text), erased)
            if stripped:
                self._update_supports(rowid, item_text, supports)
                self.tally.rewritten["successor_sources"] += 1

    @abstractmethod
    def _facts(self, rowid: int) -> tuple[str, str | None, str]:
        """The memory at ``rowid``: its text, ``superseded_by`` and supports (JSON)."""

    @abstractmethod
    def _successor(self, owner: str, memory_id: str) -> tuple[Any, ...] | None:
        """``owner``'s memory ``memory_id`` (rowid, supports, item, superseded_by), if stored."""

    @abstractmethod
    def _erase(
        self, rowid: int, owner: str, memory_id: str, text: str, successor: str | None
    ) -> None:
        """Remove the memory ``rowid`` (its row, text index entry, passages, keys, history,
        category links, use record and pin, each counted in ``tally.removed``), and ``text``
        from the history of the memories it replaced and of ``successor``
        (``tally.rewritten["neighbour_history"]``)."""

    @abstractmethod
    def _summaries(self, owner: str) -> list[tuple[str, str]]:
        """``owner``'s categories that have a summary: (name, summary)."""

    @abstractmethod
    def _put_summary(self, owner: str, name: str, summary: str) -> None:
        """Store ``summary`` as the summary of ``owner``'s category ``name`` (kind ``empty``
        when it is empty; note :data:`SCRUB_NOTE`)."""

    @abstractmethod
    def _update_supports(self, rowid: int, item_text: str, supports: list[Support]) -> None:
        """Give the memory ``rowid`` (stored item ``item_text``) the supports ``supports``."""
