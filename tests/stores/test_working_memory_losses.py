"""Working memory loses nothing (issue 41, part 2), on both backends: a ``close()`` whose
promotion fails (the store busy past its timeout) keeps the items and a second ``close()``
promotes them; a ``Memory`` dropped without ``close()``, or open when the interpreter exits,
promotes what it holds; a held item is seen by ``pin``, ``history``, ``mark_used`` and
``export_markdown`` as by ``get``."""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from memreader import AsyncMemory, Memory
from memreader.errors import StoreError
from memreader.front import lifetime

pytestmark = pytest.mark.timeout(180)

CONFIG = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}
ROOT = Path(__file__).resolve().parents[2]


def stored(url: str, query: str = "Porto") -> list[str]:
    """The texts a fresh ``Memory`` on ``url`` finds in the store for ``query``."""
    with Memory(CONFIG, store=url) as m:
        return [h.text for h in m.store.search(query, user_id="ana", mode="text")]


@contextmanager
def busy(url: str) -> Iterator[None]:
    """Another connection holds the store's write lock (SQLite) or its memory table
    (PostgreSQL) until the block ends: every write waits its timeout, then fails; reads go on."""
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)) as c:
            c.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:
                c.execute("ROLLBACK")
        return
    import psycopg

    with psycopg.connect(url) as conn:  # one transaction, rolled back when the block ends
        conn.execute("LOCK TABLE memreader_memories IN EXCLUSIVE MODE")  # reads go on
        try:
            yield
        finally:
            conn.rollback()


def quick(url: str, working: int = 5) -> Memory:
    """A ``Memory`` with working memory whose store waits 0.2 s for a lock."""
    return Memory(CONFIG, store=url, working_memory=working, store_options={"timeout": 0.2})


def test_a_close_that_fails_keeps_the_items_and_close_again_promotes(url: str) -> None:
    m = quick(url)
    held = m.add("I live in Porto.", user_id="ana", session_id="s1").working
    with busy(url):
        with pytest.raises(StoreError):
            m.close()
        assert m.working is not None and m.working.held("ana")[0].id == held[0]
        assert [h.tier for h in m.search("Porto", user_id="ana")] == ["working"]  # still open
    m.close()
    assert stored(url) == ["user: I live in Porto."]
    m.close()  # closed once: nothing more happens
    with pytest.raises(StoreError, match="this Memory is closed"):
        m.search("Porto", user_id="ana")


def test_an_async_close_that_fails_keeps_the_items_too(url: str) -> None:
    import asyncio

    async def main() -> None:
        m = AsyncMemory(CONFIG, store=url, working_memory=5, store_options={"timeout": 0.2})
        await m.add("I live in Porto.", user_id="ana", session_id="s1")
        with busy(url), pytest.raises(StoreError):
            await m.aclose()
        await m.aclose()

    asyncio.run(main())
    assert stored(url) == ["user: I live in Porto."]


def test_one_owners_failed_promotion_keeps_only_its_items(url: str) -> None:
    m = quick(url)
    m.add("I live in Porto.", user_id="ana", session_id="s1")
    m.add("I live in Porto.", user_id="bob", session_id="s1")
    write = m.store.write

    def bob_fails(items: list[object], **kwargs: object) -> object:
        if any(i.metadata.user_id == "bob" for i in items):
            raise StoreError("bob's disk is full")
        return write(items, **kwargs)  # type: ignore[arg-type]

    m.store.write = bob_fails  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="bob's disk is full"):
        m.close()
    assert m.working is not None and [o for o, _ in m.working.sessions()] == ["bob"]
    m.store.write = write  # type: ignore[method-assign]
    m.close()
    assert stored(url) == ["user: I live in Porto."]  # ana's, promoted by the first close
    with Memory(CONFIG, store=url) as again:
        assert [h.text for h in again.search("Porto", user_id="bob", mode="text")] == [
            "user: I live in Porto."
        ]


def test_a_memory_dropped_without_close_promotes_what_it_holds(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    m = quick(url)
    m.add("I live in Porto.", user_id="ana", session_id="s1")
    with caplog.at_level(logging.WARNING, logger="memreader.front.lifetime"):
        del m
        gc.collect()
    assert stored(url) == ["user: I live in Porto."]
    assert "was not closed: its 1 held items were promoted" in caplog.text


def test_a_dropped_memory_whose_store_stays_busy_says_what_was_lost(
    url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lifetime, "EXIT_RETRY_DELAYS", (0.0,))
    m = quick(url)
    held = m.add("I live in Porto.", user_id="ana", session_id="s1").working[0]
    with busy(url), caplog.at_level(logging.ERROR, logger="memreader.front.lifetime"):
        del m
        gc.collect()
    assert "promoting its 1 held items failed" in caplog.text
    assert f"they are lost (owner, id): [('ana', '{held}')]" in caplog.text


def test_a_closed_memory_dropped_later_writes_nothing_more(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    m = quick(url)
    held = m.add("I live in Porto.", user_id="ana", session_id="s1").working[0]
    m.close()
    with caplog.at_level(logging.WARNING, logger="memreader.front.lifetime"):
        del m
        gc.collect()
    assert caplog.text == ""
    with Memory(CONFIG, store=url) as again:
        assert [e.event for e in again.history(held, user_id="ana")] == ["ADD"]


def test_an_interpreter_exit_without_close_promotes_what_is_held(url: str) -> None:
    script = textwrap.dedent(
        f"""
        from memreader import Memory
        m = Memory({CONFIG!r}, store={url!r}, working_memory=5)
        print(m.add("I live in Porto.", user_id="ana", session_id="s1").working)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "was not closed: its 1 held items were promoted" in done.stderr
    assert stored(url) == ["user: I live in Porto."]


def test_a_held_item_is_seen_by_pin_history_mark_used_and_export(url: str, tmp_path: Path) -> None:
    with Memory(CONFIG, store=url, working_memory=5) as m:
        first = m.add("I live in Porto.", user_id="ana", session_id="s1").working[0]
        entries = m.history(first, user_id="ana")
        assert [(e.event, e.new_memory) for e in entries] == [("ADD", "user: I live in Porto.")]
        assert "held in working memory (session s1)" in entries[0].reason
        assert m.pin([first], user_id="ana") == 1  # promoted, then pinned
        assert m.store.pinned(user_id="ana") == [first]
        assert [e.event for e in m.history(first, user_id="ana")] == ["ADD"]  # the store's
        used = m.add("I drink green tea.", user_id="ana", session_id="s1").working[0]
        assert m.mark_used([used], user_id="ana") == 1
        assert m.store.usage([used], user_id="ana")[used].access_count == 1
        m.add("My cat is called Miso.", user_id="ana", session_id="s2")
        paths = m.export_markdown(tmp_path / "md", user_id="ana")
        text = "\n".join(Path(p).read_text(encoding="utf-8") for p in paths)
        assert "My cat is called Miso." in text
        assert m.working is not None and m.working.held("ana") == []
