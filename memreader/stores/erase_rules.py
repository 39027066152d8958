"""Erase rules, shared by both stores: the walk over every place a memory's text lives
(:mod:`memreader.stores.erasure`) that :func:`erase_one` runs inside a write transaction, and
the summary scrub a retired memory gets (:func:`scrub`). Each store's ``Changes`` writes the
SQL of each step (:class:`EraseSteps`);
:class:`~memreader.stores.change_rules.ChangeRules` calls these from ``delete_one`` and
``drop_source``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from memreader.stores.erasure import Tally, scrub_summary, strip_sources
from memreader.stores.write_decisions import Support, load_supports

__all__ = ["SCRUB_NOTE", "EraseSteps", "erase_one", "scrub", "strip_successors", "with_session"]

#: The note a summary gets when the store took lines out of it (the keeper may rewrite it).
SCRUB_NOTE = "lines citing a memory that was erased or retired were removed by the store"


def with_session(item_text: str, session_id: str) -> str:
    """A stored item (``item_text``) filed under ``session_id``."""
    data = json.loads(item_text)
    data["metadata"]["session_id"] = session_id
    return json.dumps(data, ensure_ascii=False)


class EraseSteps(Protocol):
    """The steps of the erase walk each store's ``Changes`` (one write transaction) writes in
    SQL; :func:`erase_one` and :func:`scrub` run them in order. ``tally`` counts what they
    remove and rewrite."""

    tally: Tally

    def _facts(self, rowid: int) -> tuple[str, str | None, str]:
        """The memory at ``rowid``: its text, ``superseded_by`` and supports (JSON)."""
        ...

    def _successor(self, owner: str, memory_id: str) -> tuple[Any, ...] | None:
        """``owner``'s memory ``memory_id`` (rowid, supports, item, superseded_by), if stored."""
        ...

    def _erase(
        self, rowid: int, owner: str, memory_id: str, text: str, successor: str | None
    ) -> None:
        """Remove the memory ``rowid`` (its row, text index entry, passages, keys, history,
        category links, use record and pin, each counted in ``tally.removed``), and ``text``
        from the history of the memories it replaced and of ``successor``
        (``tally.rewritten["neighbour_history"]``)."""
        ...

    def _summaries(self, owner: str) -> list[tuple[str, str]]:
        """``owner``'s categories that have a summary: (name, summary)."""
        ...

    def _put_summary(self, owner: str, name: str, summary: str) -> None:
        """Store ``summary`` as the summary of ``owner``'s category ``name`` (kind ``empty``
        when it is empty; note :data:`SCRUB_NOTE`)."""
        ...

    def _update_supports(self, rowid: int, item_text: str, supports: list[Support]) -> None:
        """Give the memory ``rowid`` (stored item ``item_text``) the supports ``supports``."""
        ...


def erase_one(steps: EraseSteps, rowid: int, owner: str, memory_id: str) -> None:
    """Remove ``owner``'s memory ``memory_id`` (at ``rowid``) from every place its text
    lives: its category summaries' lines, its successors' inherited sources, its
    neighbours' history, then its own rows (see :mod:`memreader.stores.erasure`)."""
    text, successor, supports_text = steps._facts(rowid)
    scrub(steps, owner, memory_id, text)
    strip_successors(steps, owner, successor, load_supports(supports_text))
    steps._erase(rowid, owner, memory_id, text, successor)
    steps.tally.erased.append(memory_id)


def scrub(steps: EraseSteps, owner: str, memory_id: str, text: str) -> None:
    """Take out of ``owner``'s category summaries every line that cites ``memory_id`` or
    quotes ``text`` (the memory leaves: erased, expired or forgotten)."""
    for name, summary in steps._summaries(owner):
        scrubbed = scrub_summary(summary, memory_id, text)
        if scrubbed is None:
            continue
        steps._put_summary(owner, name, scrubbed)
        steps.tally.categories.add(name)
        steps.tally.rewritten["category_summaries"] += 1


def strip_successors(
    steps: EraseSteps, owner: str, successor: str | None, erased: Sequence[Support]
) -> None:
    """Each later version of the erased memory (``update()`` chains, followed through
    ``superseded_by``) loses the sources it inherited from it."""
    seen: set[str] = set()
    while successor and successor not in seen:
        seen.add(successor)
        row = steps._successor(owner, successor)
        if row is None:
            return
        rowid, supports_text, item_text, successor = row
        supports, stripped = strip_sources(load_supports(supports_text), erased)
        if stripped:
            steps._update_supports(rowid, item_text, supports)
            steps.tally.rewritten["successor_sources"] += 1
