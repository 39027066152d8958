"""Erase through ``Memory`` (issue 41): a chat added (held in working memory or written), then
erased by id or by its session, leaves no trace a user could find: not in search, the
category summaries, the Markdown this Memory exported, nor the SQLite file's bytes; the
receipt says what was removed and that the export was written again."""

from __future__ import annotations

import asyncio
import glob
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, Memory
from memreader.stores import EraseReceipt

SECRET = "Quixotrella"


def _tree_text(folder: Path) -> str:
    return "".join(p.read_text("utf-8") for p in folder.rglob("*.md"))


def _file_bytes(path: Path) -> bytes:
    return b"".join(Path(name).read_bytes() for name in glob.glob(f"{path}*"))


def test_erasing_a_session_held_in_working_memory_leaves_no_trace(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    db, out = tmp_path / "m.db", tmp_path / "md"
    with Memory(fast_config, store=f"sqlite:///{db}", working_memory=5) as m:
        m.add("I drink oolong tea every morning.", user_id="ana", session_id="s0")
        m.end_session("s0", user_id="ana")
        m.export_markdown(out, user_id="ana")
        held = m.add(f"My childhood nickname was {SECRET}.", user_id="ana", session_id="s1")
        assert held.working  # held, not stored yet: the erasure must still reach it

        receipt = m.forget("session:s1", user_id="ana", erase=True)

        assert isinstance(receipt, EraseReceipt) and receipt.erased == tuple(held.working)
        assert receipt.rewritten["markdown_exports"] == 1
        assert all(SECRET not in hit.text for hit in m.search(SECRET, user_id="ana"))
        assert all(SECRET not in c.summary for c in m.categories("ana"))
        assert SECRET not in _tree_text(out) and "oolong" in _tree_text(out)
    assert SECRET.encode() not in _file_bytes(db)
    assert SECRET.lower().encode() not in _file_bytes(db)


def test_an_erased_memory_leaves_the_export_and_the_summaries(
    memory: Memory, tmp_path: Path
) -> None:
    added = memory.add(f"My locker code word is {SECRET}.", user_id="ana", session_id="s1")
    memory.add("I drink oolong tea every morning.", user_id="ana", session_id="s2")
    out = tmp_path / "md"
    memory.export_markdown(out, user_id="ana")
    assert SECRET in _tree_text(out)
    assert any(SECRET in c.summary for c in memory.categories("ana"))

    receipt = memory.delete(added.items[0].id, user_id="ana", erase=True)

    assert receipt.erased == (added.items[0].id,) and receipt.categories
    assert SECRET not in _tree_text(out) and "oolong" in _tree_text(out)
    assert all(SECRET not in c.summary for c in memory.categories("ana"))


def test_a_plain_delete_rewrites_the_export_too(memory: Memory, tmp_path: Path) -> None:
    added = memory.add(f"My locker code word is {SECRET}.", user_id="ana", session_id="s1")
    out = tmp_path / "md"
    memory.export_markdown(out, user_id="ana")
    event = memory.delete(added.items[0].id, user_id="ana")
    assert event.event == "EXPIRE" and SECRET not in _tree_text(out)


def test_the_async_memory_hands_back_the_receipt(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    async def run() -> EraseReceipt:
        async with AsyncMemory(fast_config, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
            await m.add(f"My locker code word is {SECRET}.", user_id="ana", session_id="s1")
            return await m.forget("session:s1", user_id="ana", erase=True)

    receipt = asyncio.run(run())
    assert len(receipt.erased) == 1 and receipt.removed["memories"] == 1


def test_an_export_that_cannot_be_rewritten_is_named_in_the_receipt(
    memory: Memory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    added = memory.add(f"My locker code word is {SECRET}.", user_id="ana", session_id="s1")
    out = tmp_path / "md"
    memory.export_markdown(out, user_id="ana")
    (out / "ana" / "notes.txt").write_text("mine")  # a foreign file: the export refuses it
    receipt = memory.delete(added.items[0].id, user_id="ana", erase=True)
    assert "markdown_exports" not in receipt.rewritten
    assert any(f"markdown export {out} not rewritten" in place for place in receipt.residue)
    assert any("not rewritten" in r.message for r in caplog.records)
