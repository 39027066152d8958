"""Memories and categories the category tests seed a store with (three memories of one owner
in two categories, one summary), and a batch job that writes a few: shared by the Markdown
export tests and the service's UI tests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import MemoryStore, open_store
from memreader.stores.category_types import CategoryDef

T0 = datetime(2023, 5, 3, 9, 12, tzinfo=timezone.utc)


PREFS = CategoryDef(name="preferences", description="Likes, dislikes and tastes.")


WORK = CategoryDef(name="work", description="What the user does for a living.")


GOALS = CategoryDef(name="goals", description="What the user wants to achieve.")


def item(
    item_id: str,
    text: str,
    *,
    user: str = "ana",
    session: str = "s12",
    at: datetime | None = None,
    doc: str | None = None,
    heading: str | None = None,
    importance: float | None = None,
) -> TextualMemoryItem:
    """A memory citing one source: a chat message at ``at``, or the document ``doc``."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        timestamp=at if doc is None else None,
        doc_path=doc,
        heading=heading,
    )
    meta = TextualMemoryItemMetadata(
        user_id=user, session_id=session, sources=[source], importance=importance, valid_from=at
    )
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def open_db(tmp_path: Path) -> MemoryStore:
    return open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True)


def seed(store: MemoryStore, user: str = "ana", prefix: str = "") -> None:
    """Three memories of ``user`` in two categories (a third one empty), one summary."""
    store.write(
        [
            item(f"{prefix}m1", "Ana prefers green tea.", user=user, at=T0, importance=0.8),
            item(f"{prefix}m2", "Ana dislikes coffee.", user=user, at=T0 + timedelta(days=2)),
            item(f"{prefix}m3", "Ana works at Acme.", user=user, doc="notes.md", heading="Work"),
        ]
    )
    store.upsert_categories(user, [PREFS, WORK, GOALS])
    store.link_categories(
        user,
        {f"{prefix}m1": ["preferences"], f"{prefix}m2": ["preferences"], f"{prefix}m3": ["work"]},
    )
    store.save_summary(
        user,
        "preferences",
        summary=f"Ana likes green tea. [ref:{prefix}m1]\nAna avoids coffee. [ref:{prefix}m2]",
        kind="llm",
        note=None,
        now=T0 + timedelta(days=3),
    )


READER = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}


def write_job(folder: Path, output: dict[str, Any]) -> Path:
    (folder / "in").mkdir(exist_ok=True)
    scenes = [
        [
            {"role": "user", "content": f"Day {k}: I drank green tea number {k}."},
            {"role": "assistant", "content": f"Noted {k}."},
        ]
        for k in range(3)
    ]
    (folder / "in" / "chat.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in scenes), encoding="utf-8"
    )
    job = {
        "reader": READER,
        "inputs": [
            {"path": "in", "format": "jsonl", "user_id": {"from": "constant", "value": "u1"}}
        ],
        "output": output,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path
