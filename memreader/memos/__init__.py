"""Coming from MemOS: its reader configs, calls and items, at memreader's edges.

Switching is a change of import lines::

    from memreader.memos import MemReaderConfigFactory, MemReaderFactory, TextualMemoryItem

- :mod:`~memreader.memos.config_shapes` (with :mod:`~memreader.memos.config_backends`,
  :mod:`~memreader.memos.reader_settings` and :mod:`~memreader.memos.translation`): MemOS's
  nested reader configs translated, with a report;
- :mod:`~memreader.memos.reader`: MemOS's call shapes and defaults (:class:`MemOSReader`);
- :mod:`~memreader.memos.factory`: MemOS's factory names;
- :mod:`~memreader.memos.items_in` and :mod:`~memreader.memos.items_out`: MemOS's items read,
  and memreader's written in MemOS's shape (``item.to_memos_dict()``);
- :mod:`~memreader.memos.stored`: a stored memory, its lifecycle as MemOS's ``status``;
- :mod:`~memreader.memos.formats`: the item and config shapes registered with the core
  (:data:`memreader.items.ITEM_FORMATS`, :data:`memreader.factory.CONFIG_FORMATS`), which
  loads that module by name, so ``TextualMemoryItem.from_dict`` and ``MemReaderConfigFactory``
  take MemOS's dicts without importing this package.

memreader's own API is unchanged; see the README's "Coming from MemOS".
"""

from __future__ import annotations

from memreader.items import SourceMessage, TextualMemoryItem
from memreader.memos.config_shapes import looks_like_memos_config, translate_reader_config
from memreader.memos.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.memos.reader import (
    MEMOS_CALL_DEFAULTS,
    MEMREADER_CALL_DEFAULTS,
    CallDefaults,
    MemOSReader,
)
from memreader.memos.stored import LIFECYCLE_STATUS, stored_to_memos_dict
from memreader.memos.translation import Translation, TranslationNote

__all__ = [
    "LIFECYCLE_STATUS",
    "MEMOS_CALL_DEFAULTS",
    "MEMREADER_CALL_DEFAULTS",
    "CallDefaults",
    "MemOSReader",
    "MemReaderConfigFactory",
    "MemReaderFactory",
    "SourceMessage",
    "TextualMemoryItem",
    "Translation",
    "TranslationNote",
    "looks_like_memos_config",
    "stored_to_memos_dict",
    "translate_reader_config",
]
