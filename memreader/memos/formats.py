"""MemOS's shapes registered with memreader's core, which names this module instead of
importing it: its item dicts as the ``memos`` item format of :data:`memreader.items.ITEM_FORMATS`
(read by :mod:`~memreader.memos.items_in`, written by :mod:`~memreader.memos.items_out`) and
its reader configs as the ``memos`` config format of :data:`memreader.factory.CONFIG_FORMATS`
(:mod:`~memreader.memos.config_shapes`).

The core looks the name up the first time a dict needs it, so a MemOS item or config works
with no import of this package:

>>> from memreader.items import ITEM_FORMATS
>>> ITEM_FORMATS.get("memos").recognizes({"memory": "I like tea"})
True
>>> from memreader.factory import CONFIG_FORMATS
>>> CONFIG_FORMATS.get("memos").recognizes({"chunker": {"backend": "sentence"}})
True
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from memreader.errors import MemOSItemError
from memreader.factory import CONFIG_FORMATS
from memreader.items import ITEM_FORMATS
from memreader.memos.config_shapes import looks_like_memos_config, translate_reader_config
from memreader.memos.items_in import from_memos_dict, looks_like_memos
from memreader.memos.items_out import memos_dict
from memreader.memos.translation import Translation

__all__ = ["MEMOS_CONFIGS", "MEMOS_ITEMS", "MemOSConfigFormat", "MemOSItemFormat"]


@dataclass(frozen=True)
class MemOSItemFormat:
    """MemOS's ``TextualMemoryItem`` dicts (its ``to_dict()`` or ``model_dump()``)."""

    def recognizes(self, data: dict[str, Any]) -> bool:
        return looks_like_memos(data)

    def read(
        self, data: dict[str, Any], metadata_fields: frozenset[str], source_fields: frozenset[str]
    ) -> dict[str, Any]:
        return from_memos_dict(data, metadata_fields, source_fields)

    def write(self, data: dict[str, Any], status: str | None) -> dict[str, Any]:
        return memos_dict(data, status)

    def invalid(self, where: str, why: str) -> MemOSItemError:
        return MemOSItemError(f"a MemOS item's {where}: {why}")


@dataclass(frozen=True)
class MemOSConfigFormat:
    """MemOS's reader configs (``llm: {backend, config: {model_name_or_path...}}``...)."""

    def recognizes(self, config: Mapping[str, Any]) -> bool:
        return looks_like_memos_config(config)

    def translate(self, config: Mapping[str, Any], *, fields: Collection[str]) -> Translation:
        return translate_reader_config(config, fields=fields)


# Equal instances: a re-import of this module registers the same thing again, a no-op.
MEMOS_ITEMS = ITEM_FORMATS.register("memos", MemOSItemFormat())
MEMOS_CONFIGS = CONFIG_FORMATS.register("memos", MemOSConfigFormat())
