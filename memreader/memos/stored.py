"""Stored memories in MemOS's shape: the store's lifecycle as MemOS's ``status``."""

from __future__ import annotations

from typing import Any

from memreader.memos.items_out import memos_dict
from memreader.stores.records import StoredMemory

__all__ = ["LIFECYCLE_STATUS", "stored_to_memos_dict"]

#: A store's lifecycle (:data:`memreader.stores.records.MemoryStatus`) as MemOS's ``status``.
LIFECYCLE_STATUS = {"active": "activated", "superseded": "archived", "expired": "deleted"}


def stored_to_memos_dict(stored: StoredMemory) -> dict[str, Any]:
    """The MemOS item dict of a stored memory, its lifecycle as MemOS's ``status``
    (``active`` -> ``activated``, ``superseded`` -> ``archived``, ``expired`` -> ``deleted``);
    what the store knows beyond it (``superseded_by``, ``valid_to``, ``retired_at``,
    ``recorded_at``, ``reinforced``) goes to ``internal_info["memreader_store"]``."""
    out = memos_dict(stored.item.to_dict(), LIFECYCLE_STATUS[stored.status])
    facts = {
        "lifecycle": stored.status,
        "superseded_by": stored.superseded_by,
        "valid_to": stored.valid_to.isoformat() if stored.valid_to else None,
        "retired_at": stored.retired_at.isoformat() if stored.retired_at else None,
        "recorded_at": stored.recorded_at.isoformat(),
        "reinforced": stored.reinforced,
    }
    internal = out["metadata"].setdefault("internal_info", {})
    internal["memreader_store"] = {k: v for k, v in facts.items() if v is not None}
    return out
