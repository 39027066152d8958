"""The ``markdown`` sink: a job's items into a memory store, as the ``store`` sink writes them,
then, when the job ends, the memory of every owner the job wrote as Markdown files an agent can
read (:mod:`memreader.categories.markdown`)::

    output: {format: markdown, store: sqlite:///m.db, path: memory}

gives ``memory/<user folder>/index.md`` and ``memory/<user folder>/<category>.md`` beside the
job's ``_manifest.json``, ``_errors.jsonl`` and ``_summary.json`` (user folders never start
with ``_``); ``layout: memu`` gives memU's ``memory.md``, ``skill.md``, ``index/``,
``memory/`` and ``skill/`` instead (:mod:`memreader.categories.markdown_memu`).

The Markdown derives from the store, not from one input: it is written once, by the driver,
after the last input (:meth:`~memreader.batch.sinks.base.Sink.finish`), for the owners whose
items the inputs of this run committed, from what the store then holds. A run that fails, or
is killed, before its end leaves those owners' Markdown as it was (the inputs stay committed,
and a rerun reads nothing again): ``memreader export-md`` brings it up to date. So does it for
an owner whose memories only a rerun's retirement changed (the store does not say whose those
were). ``path`` must be a local folder (the export renames files into place).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import TYPE_CHECKING

from memreader.batch.places import is_s3_url
from memreader.batch.places.local import LocalFolder
from memreader.batch.sinks.base import register_sink
from memreader.batch.sinks.store import StoreSink
from memreader.errors import ConfigError, MemReaderError, SinkError

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec

__all__ = ["MarkdownSink"]


@register_sink("markdown")
class MarkdownSink(StoreSink):
    """Items into the store ``output.store``; at the job's end, the Markdown memory of the
    owners it wrote under ``output.path`` (see the module docstring)."""

    @classmethod
    def check(cls, spec: OutputSpec) -> None:
        """Refuse a spec without ``store``, or with an ``s3://`` path."""
        if spec.store is None:
            raise ConfigError("format: markdown needs output.store (a store URL, sqlite:///m.db)")
        if is_s3_url(spec.path):
            raise ConfigError(
                "format: markdown writes a local folder (output.path), not s3://; use "
                "format: store, then memreader export-md"
            )

    def finish(self, owners: Collection[str]) -> list[str]:
        """Export the Markdown memory of ``owners``; the entry file of each (``index.md``, or
        ``memory.md`` in memU's layout).

        Raises:
            SinkError: the store could not be read or a file written (the message says how to
                retry).
        """
        from memreader.categories.markdown import INDEX, export_markdown
        from memreader.categories.markdown_memu import MEMORY_ENTRY

        if not owners:
            return []
        assert isinstance(self.folder, LocalFolder)  # check() refused s3://
        try:
            paths = export_markdown(self.store, owners, self.folder.path, layout=self.spec.layout)
        except MemReaderError as exc:
            raise SinkError(
                f"the items are stored, but their Markdown was not written under "
                f"{self.folder.path}: {exc} (run memreader export-md to retry)"
            ) from exc
        entry = MEMORY_ENTRY if self.spec.layout == "memu" else INDEX
        # <user folder>/<entry>: not memu's memory/memory.md, a category called "memory".
        return [
            path
            for path in paths
            if os.path.relpath(path, self.folder.path).split(os.sep)[1:] == [entry]
        ]

    def __repr__(self) -> str:
        return f"MarkdownSink({self.where!r}, {self.folder.location('')!r})"
