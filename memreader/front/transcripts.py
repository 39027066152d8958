"""Raw transcripts kept beside a ``Memory``'s store by one of its faces, reached by an erasure.

A face that keeps the messages a ``Memory`` read, verbatim (the OpenAI Agents session keeps its
items: :mod:`memreader.integrations.openai_agents`), holds text an erasure must reach: its
store's rows are erased, but the transcript would still say what the forgotten source said.
Such a face registers a :class:`TranscriptKeeper` with
:meth:`Memory.keep_transcripts <memreader.front.removal.RemovalCalls.keep_transcripts>`;
``Memory.forget(source, erase=True)`` then asks each keeper to erase what ``source`` said (a
session's items, one message), counts it in the receipt's ``removed["transcripts"]``, and names
a keeper that failed in its ``residue``. A forget without ``erase`` leaves transcripts as they
are (the memories expire; the record of the conversation is the keeper's to manage).

Keepers are held weakly: a face that is gone is not called, and what no live face keeps is not
reached from here (each keeper's docs say how to erase it).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import replace
from typing import Protocol, runtime_checkable

from memreader.errors import InputError
from memreader.stores import EraseReceipt, SourceSelector

__all__ = ["TranscriptKeeper", "Transcripts"]

logger = logging.getLogger(__name__)

#: The receipt's ``removed`` key the keepers' counts go to.
PLACE = "transcripts"


@runtime_checkable
class TranscriptKeeper(Protocol):
    """A face keeping raw transcripts of a ``Memory``'s owners."""

    def erase_source(self, owner: str, source: SourceSelector) -> int:
        """Erase what ``source`` said from ``owner``'s transcripts kept here (nothing for a
        source or an owner this keeper does not keep); how many kept items were removed."""
        ...


class Transcripts:
    """The keepers registered with one ``Memory`` (weakly held)."""

    def __init__(self) -> None:
        self._keepers: weakref.WeakSet[TranscriptKeeper] = weakref.WeakSet()

    def add(self, keeper: TranscriptKeeper) -> None:
        """Register ``keeper`` (again: nothing changes).

        Raises:
            InputError: ``keeper`` has no ``erase_source``.
        """
        if not isinstance(keeper, TranscriptKeeper):
            raise InputError(
                f"a transcript keeper needs erase_source(owner, source), got {keeper!r:.80}"
            )
        self._keepers.add(keeper)

    def erase(self, owner: str, source: SourceSelector, receipt: EraseReceipt) -> EraseReceipt:
        """``receipt`` with what each keeper erased of ``source`` counted, and each keeper that
        failed named in its ``residue`` (one keeper's failure never stops the others)."""
        removed, failed = 0, []
        for keeper in list(self._keepers):
            try:
                removed += keeper.erase_source(owner, source)
            except Exception as exc:  # named in the receipt: the caller sees what may remain
                logger.warning("erasing %r from %r failed: %s", source, keeper, exc, exc_info=exc)
                failed.append(f"{keeper!r}: its kept transcript could not be erased ({exc})")
        if not removed and not failed:
            return receipt
        counts = {**receipt.removed, PLACE: receipt.removed.get(PLACE, 0) + removed}
        return replace(receipt, removed=counts, residue=(*receipt.residue, *failed))
