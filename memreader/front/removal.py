"""The removing calls of :class:`~memreader.front.memory.Memory` (:class:`RemovalCalls`):
``delete`` one memory by id and ``forget`` what a source said, each an erasure with
``erase=True`` that returns the store's :class:`~memreader.stores.erasure.EraseReceipt`
(:mod:`memreader.stores.erasure`). The owner's held working-memory items are promoted first,
so a removal reaches them too; the Markdown this ``Memory`` exported for the owner
(:meth:`~memreader.front.categories.CategoryCalls.export_markdown`) is written again after it,
so its files no longer show what was removed (``rewritten["markdown_exports"]``; a folder
that cannot be rewritten is named in the receipt's ``residue``), and an erasing ``forget``
reaches the raw transcripts a face keeps beside the store (:mod:`memreader.front.transcripts`)."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace
from typing import Any, Literal, overload

from memreader.front.inputs import source_selector
from memreader.front.transcripts import TranscriptKeeper, Transcripts
from memreader.stores import EraseReceipt, MemoryStore, WriteEvent

__all__ = ["RemovalCalls"]


class RemovalCalls:
    """``delete`` and ``forget`` on a ``Memory``'s store (owners checked by its ``_owner``)."""

    store: MemoryStore

    @abstractmethod
    def _owner(self, user_id: Any, call: str) -> str:
        """``user_id`` checked for ``call`` (the Memory open)."""

    @abstractmethod
    def _settle(self, owner: str) -> None:
        """Promote ``owner``'s held working-memory items (a removal must see them)."""

    @abstractmethod
    def _refresh_exports(self, owner: str) -> tuple[int, list[str]]:
        """Rewrite ``owner``'s Markdown exports of this Memory: the folders rewritten, and
        why each other could not be."""

    def keep_transcripts(self, keeper: TranscriptKeeper) -> None:
        """Register a face that keeps raw transcripts of this Memory's owners (held weakly):
        ``forget(source, erase=True)`` erases what ``source`` said there too
        (:mod:`memreader.front.transcripts`)."""
        self._transcripts().add(keeper)

    def _transcripts(self) -> Transcripts:
        kept = self.__dict__.get("_kept_transcripts")
        if kept is None:
            kept = self.__dict__["_kept_transcripts"] = Transcripts()
        return kept

    def _with_exports(self, owner: str, receipt: EraseReceipt) -> EraseReceipt:
        """``receipt`` with this Memory's Markdown exports of ``owner`` rewritten (they showed
        what the removal took), counted; a folder that cannot be is named in ``residue``."""
        done, failed = self._refresh_exports(owner)
        if not done and not failed:
            return receipt
        rewritten = {**receipt.rewritten, "markdown_exports": done} if done else receipt.rewritten
        return replace(receipt, rewritten=rewritten, residue=(*receipt.residue, *failed))

    @overload
    def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: Literal[False] = False
    ) -> WriteEvent: ...

    @overload
    def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: Literal[True]
    ) -> EraseReceipt: ...

    @overload
    def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: bool
    ) -> WriteEvent | EraseReceipt: ...

    def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: bool = False
    ) -> WriteEvent | EraseReceipt:
        """Expire the memory ``memory_id`` now (its row and history stay; the event).
        ``erase=True`` removes it from every place its text lives instead, **irreversibly**,
        and returns the :class:`~memreader.stores.erasure.EraseReceipt` (what was removed,
        from where, and what the backend cannot reach). See
        :meth:`memreader.stores.MemoryStore.delete`.

        >>> from memreader import Memory
        >>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
        >>> added = m.add_memory("My PIN is 4321.", user_id="ana")
        >>> receipt = m.delete(added.memory_id, user_id="ana", erase=True)
        >>> receipt.erased == (added.memory_id,), receipt.removed["memories"]
        (True, 1)

        Raises:
            UnknownMemoryError: ``user_id`` has no memory ``memory_id``.
            InputError: no ``user_id``; ``erase`` is not true or false.
        """
        owner = self._owner(user_id, "delete()")
        self._settle(owner)
        done = self.store.delete(memory_id, user_id=owner, erase=erase)
        if isinstance(done, EraseReceipt):
            return self._with_exports(owner, done)
        self._refresh_exports(owner)
        return done

    def forget(
        self, source: Any, *, user_id: str | None = None, erase: bool = False
    ) -> EraseReceipt:
        """Forget what ``source`` said (``session:ID``, ``doc:PATH``, ``message:ID``,
        ``input:KEY`` or a :class:`~memreader.stores.SourceSelector`): memories only it
        supports expire (their history stays), the others lose its sources. ``erase=True``
        erases the memories only it supports instead (**irreversible**), and what the source
        said in the transcripts a face keeps (``removed["transcripts"]``). The
        :class:`~memreader.stores.erasure.EraseReceipt` (it iterates over the events). See
        :meth:`memreader.stores.MemoryStore.forget`.

        Raises:
            InputError: no ``user_id``; a bad ``source``; ``erase`` is not true or false.
        """
        owner = self._owner(user_id, "forget()")
        self._settle(owner)
        selector = source_selector(source)
        receipt = self.store.forget(selector, user_id=owner, erase=erase)
        if erase is True:  # what the source said, also where a face keeps it verbatim
            receipt = self._transcripts().erase(owner, selector, receipt)
        return self._with_exports(owner, receipt)
