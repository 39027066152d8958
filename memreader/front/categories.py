"""The category calls of :class:`~memreader.front.memory.Memory` (:class:`CategoryCalls`): an
owner's categories and the Markdown export of their memory (see :mod:`memreader.categories`)."""

from __future__ import annotations

import logging
import os
from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memreader.errors import MemReaderError
from memreader.front.call_deadline import answered_in_time
from memreader.front.inputs import check_user
from memreader.front.working import WorkingMemory
from memreader.stores import MemoryStore, StoredCategory

if TYPE_CHECKING:
    from memreader.categories.markdown import MarkdownLayout

__all__ = ["CategoryCalls"]

logger = logging.getLogger(__name__)


class CategoryCalls:
    """Categories and Markdown on a ``Memory``'s store (owners checked by its ``_owner``)."""

    store: MemoryStore
    working: WorkingMemory | None

    @abstractmethod
    def _owner(self, user_id: Any, call: str) -> str:
        """``user_id`` checked for ``call`` (the Memory open)."""

    @abstractmethod
    def _check_open(self) -> None:
        """Raise when the Memory is closed."""

    def categories(self, user_id: str | None = None) -> list[StoredCategory]:
        """``user_id``'s categories, each with its summary."""
        found = self.store.categories(self._owner(user_id, "categories()"))
        return answered_in_time(found, "categories()")

    def markdown_file(
        self, file_name: str, *, user_id: str | None = None, layout: MarkdownLayout = "flat"
    ) -> bytes | None:
        """One file of ``user_id``'s Markdown memory as :meth:`export_markdown` writes it in
        ``layout`` (flat: ``index.md`` or a category's ``<name>.md``; memu: ``memory.md``,
        ``skill.md``, ``index/sources.md``, ``memory/<name>.md`` or ``skill/<name>/SKILL.md``),
        or ``None`` when there is no such file
        (:func:`memreader.categories.markdown.render_file`).

        >>> from memreader import Memory
        >>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
        >>> m.markdown_file("index.md", user_id="ana").startswith(b"# ")
        True
        >>> m.markdown_file("memory.md", user_id="ana", layout="memu").startswith(b"# Memory")
        True
        >>> m.markdown_file("nothing.md", user_id="ana") is None
        True

        Raises:
            InputError: no ``user_id``; an unknown ``layout``.
        """
        from memreader.categories.markdown import check_layout, render_file

        owner = self._owner(user_id, "markdown_file()")
        found = render_file(self.store, owner, file_name, check_layout(layout))
        return answered_in_time(found, "markdown_file()")

    def export_markdown(
        self,
        folder: str | os.PathLike[str],
        *,
        user_id: str | Sequence[str] | None = None,
        allow_foreign_files: bool = False,
        layout: MarkdownLayout = "flat",
    ) -> list[str]:
        """Write each owner's memory as Markdown under ``folder/<user folder>/`` in ``layout``
        (``flat``: ``index.md`` and ``<category>.md``; ``memu``: ``memory.md``, ``skill.md``,
        ``index/``, ``memory/`` and ``skill/``; see
        :func:`memreader.categories.markdown.export_markdown`); the paths written, sorted.
        The owners' items held in working memory are promoted first, so the files hold them.
        A later ``delete`` or ``forget`` of theirs rewrites the folder in the same layout.

        Raises:
            InputError: no ``user_id``; an unknown ``layout``.
            ForeignFilesError: a user folder holds files the export did not write.
        """
        from memreader.categories.markdown import check_layout, export_markdown

        self._check_open()
        layout = check_layout(layout)
        users = [user_id] if isinstance(user_id, str) or user_id is None else list(user_id)
        owners = [check_user(user, "export_markdown()") for user in users]
        for owner in owners:
            if self.working is not None:  # the files hold what working memory holds too
                self.working.settle(owner)
        where = os.fspath(folder)
        paths = export_markdown(
            self.store, owners, where, allow_foreign_files=allow_foreign_files, layout=layout
        )
        for owner in owners:  # a later delete or forget of theirs rewrites this folder
            self.__dict__.setdefault("_exported", {}).setdefault(owner, {})[where] = (
                allow_foreign_files,
                layout,
            )
        return paths

    def _refresh_exports(self, owner: str) -> tuple[int, list[str]]:
        """Rewrite ``owner``'s Markdown in every folder this Memory exported it to (a removal
        changed what it shows): how many folders were rewritten, and why each other one
        could not be (it still holds what it held)."""
        from memreader.categories.markdown import export_report

        done, failed = 0, []
        folders: dict[str, tuple[bool, MarkdownLayout]]
        folders = self.__dict__.get("_exported", {}).get(owner, {})
        for folder, (allow, layout) in sorted(folders.items()):
            try:
                export_report(self.store, [owner], folder, allow_foreign_files=allow, layout=layout)
            except MemReaderError as exc:
                failed.append(f"markdown export {folder} not rewritten: {exc}")
                logger.warning("%s", failed[-1])
                continue
            done += 1
        return done, failed
