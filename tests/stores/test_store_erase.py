"""Erase that erases (issue 41) on both backends, through ``open_store(url)``: after
``delete(erase=True)`` or ``forget(source, erase=True)`` the memory's text is in no table
(category summaries, a successor's sources, neighbours' history included), the receipt counts
what left from where, and on SQLite not one byte of it is left in the file or its WAL once
closed. A forget without ``erase`` files a memory it keeps under a session that still says it."""

from __future__ import annotations

import glob
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memreader.categories.config import CategoriesConfig, SummarySettings
from memreader.categories.maintainer import CategoryMaintainer
from memreader.errors import InputError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import EraseReceipt, MemoryStore, SourceSelector, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, sql

pytestmark = pytest.mark.timeout(120)

SECRET = "Zanzibarquux"


def said(item_id: str, text: str, *, session: str = "s1", message: str = "m1") -> TextualMemoryItem:
    """A chat memory of ``u1`` whose one source is message ``message`` of ``session``, verbatim."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        message_id=message,
        role="user",
        chat_time="2026-01-10T12:00:00Z",
    )
    meta = TextualMemoryItemMetadata(user_id="u1", session_id=session, sources=[source])
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def everything(url: str) -> str:
    """Every row of every table of the store's database, as text."""
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            names = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            return "\n".join(
                repr(row) for name in names for row in conn.execute(f'SELECT * FROM "{name}"')
            )
    tables = sql(url, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'memreader%%'")
    return "\n".join(
        str(row) for (name,) in tables for row in sql(url, f"SELECT t::text FROM {name} t")
    )


@pytest.fixture
def kept(url: str) -> Iterator[MemoryStore]:
    """The store with a deterministic category keeper (every memory in the catch-all)."""
    config = CategoriesConfig(defaults=False, summaries=SummarySettings(mode="deterministic"))
    with open_store(url, embedder=HashEmbedder()) as opened:
        opened.category_keeper = CategoryMaintainer(config)
        yield opened


def test_erase_leaves_its_text_in_no_table_and_says_where(kept: MemoryStore, url: str) -> None:
    kept.write([said("a", f"I moved to {SECRET} last spring."), said("b", "I drink green tea.")])
    assert SECRET in kept.categories("u1")[0].summary  # the summary quotes it
    new = kept.update("a", "I moved to Lisbon last spring.", user_id="u1", now=T0)
    successor = kept.get(new.memory_id, user_id="u1")
    assert successor is not None and SECRET in successor.item.metadata.sources[0].content
    kept.pin(["a"], user_id="u1")
    kept.record_use(["a"], user_id="u1")
    assert SECRET in everything(url)

    receipt = kept.delete("a", user_id="u1", erase=True)

    assert isinstance(receipt, EraseReceipt) and receipt.erased == ("a",)
    assert SECRET not in everything(url)
    assert SECRET.lower() not in everything(url).lower()
    assert receipt.target == "memory:a" and [e.memory_id for e in receipt] == ["a"]
    assert receipt.removed == {
        "memories": 1,
        "text_index": 1,
        "passages": 1,
        "keys": 2,
        "history": 2,
        "category_links": 1,
        "use_records": 1,
        "pins": 1,
    }
    assert receipt.rewritten == {"neighbour_history": 1, "successor_sources": 1}
    # The successor keeps its keys (forgetting its session still reaches it), not the message.
    after = kept.get(new.memory_id, user_id="u1")
    assert after is not None and after.item.metadata.sources == []
    forgotten = kept.forget(SourceSelector(session_id="s1"), user_id="u1")
    assert sorted(forgotten.expired) == sorted([new.memory_id, "b"])
    assert receipt.to_dict()["removed"]["memories"] == 1 and receipt.residue  # says what stays


def test_erase_takes_its_lines_out_of_every_category_summary(kept: MemoryStore, url: str) -> None:
    kept.write([said("a", f"{SECRET} is my cat."), said("b", "I drink green tea.")])
    receipt = kept.delete("a", user_id="u1", erase=True)
    (other,) = kept.categories("u1")
    assert SECRET not in other.summary and "[ref:b]" in other.summary
    assert other.item_ids == ("b",)
    # The keeper wrote it again after the erasure (the store's scrub note is gone).
    assert (other.summary_kind, other.summary_note) == ("deterministic", None)
    assert receipt.categories == ("other",) and receipt.rewritten["category_summaries"] == 1
    table = "categories" if url.startswith("sqlite") else "memreader_categories"
    rows = sql(url, f"SELECT summary FROM {table}")
    assert rows and all(SECRET not in summary for (summary,) in rows)


def test_a_delete_takes_its_lines_out_of_summaries_without_a_keeper(
    store: MemoryStore,
) -> None:
    store.write([said("a", f"{SECRET} is my cat."), said("b", "I drink green tea.")])
    store.upsert_categories("u1", CategoriesConfig(defaults=False).all())
    store.link_categories("u1", {"a": ["other"], "b": ["other"]})
    store.save_summary(
        "u1",
        "other",
        summary=f"- {SECRET} is my cat. [ref:a]\n- Tea [ref:b]",
        kind="llm",
        note=None,
    )
    store.delete("a", user_id="u1")
    (other,) = store.categories("u1")
    assert (other.summary, other.summary_kind) == ("- Tea [ref:b]", "llm")
    assert other.summary_note is not None and "removed by the store" in other.summary_note


def test_forget_with_erase_erases_what_only_that_session_said(store: MemoryStore, url: str) -> None:
    store.write([said("a", f"My dog is called {SECRET}.", session="s1", message="m1")])
    store.write([said("b", "I live in Porto.", session="s2", message="m2")])
    store.write([said("c", "I live in Porto.", session="s1", message="m3")])  # b reinforced
    store.delete("a", user_id="u1")  # expired before: an erasure reaches it all the same

    receipt = store.forget(SourceSelector(session_id="s1"), user_id="u1", erase=True)

    assert (receipt.erased, receipt.reduced, receipt.expired) == (("a",), ("b",), ())
    assert [(e.event, e.memory_id) for e in receipt] == [("EXPIRE", "a"), ("UPDATE", "b")]
    assert receipt.target == "session:s1" and receipt.removed["memories"] == 1
    assert SECRET not in everything(url)
    b = store.get("b", user_id="u1")
    assert b is not None and [s.message_id for s in b.item.metadata.sources] == ["m2"]


def test_forget_files_a_kept_memory_under_a_session_that_said_it(store: MemoryStore) -> None:
    store.write([said("b", "I live in Porto.", session="s1", message="m1")])
    store.write([said("c", "I live in Porto.", session="s2", message="m2")])  # b reinforced
    receipt = store.forget(SourceSelector(session_id="s1"), user_id="u1")
    assert receipt.reduced == ("b",) and receipt.rewritten["session_moved"] == 1
    stored = store.get("b", user_id="u1")
    assert stored is not None and stored.item.metadata.session_id == "s2"
    block = store.context("where do I live?", user_id="u1", max_tokens=300)
    assert [p.session_id for p in block.parts] == ["s2"] and 'id="s1"' not in block.text
    assert [h.memory.id for h in store.search("Porto", user_id="u1", session_id="s2")] == ["b"]
    assert store.search("Porto", user_id="u1", session_id="s1") == []


def test_a_forget_without_erase_expires_and_its_receipt_says_so(store: MemoryStore) -> None:
    store.write([said("a", "I live in Porto.")])
    receipt = store.forget(SourceSelector(session_id="s1"), user_id="u1")
    assert (receipt.expired, receipt.erased, receipt.removed, receipt.residue) == (
        ("a",),
        (),
        {},
        (),
    )
    assert list(store.forget(SourceSelector(session_id="s1"), user_id="u1")) == []


def test_forget_refuses_an_erase_that_is_not_a_bool(store: MemoryStore) -> None:
    with pytest.raises(InputError, match="erase must be true or false, got 'yes'"):
        store.forget(SourceSelector(session_id="s1"), user_id="u1", erase="yes")  # type: ignore[arg-type]


def _file_bytes(path: str) -> bytes:
    return b"".join(open(name, "rb").read() for name in sorted(glob.glob(path + "*")))


def test_no_byte_of_an_erased_memory_is_left_in_the_sqlite_file(tmp_path: object) -> None:
    path = f"{tmp_path}/m.db"
    with open_store(f"sqlite:///{path}", embedder=HashEmbedder()) as opened:
        for n in range(30):  # many commits: many FTS5 segments, some holding the secret's terms
            opened.write([said(f"k{n}", f"Keepsake note number {n} about the garden.")])
        opened.write([said("a", f"My bank PIN hint is {SECRET} Overture.")])
        opened.update("a", "My bank PIN hint changed.", user_id="u1")
        before = _file_bytes(path)
        assert SECRET.encode() in before or SECRET.lower().encode() in before
        receipt = opened.delete("a", user_id="u1", erase=True)
    assert "sqlite: WAL checkpointed and truncated" in receipt.file_steps
    after = _file_bytes(path)
    for word in (SECRET, "Overture"):
        assert word.encode() not in after and word.lower().encode() not in after, word
    assert b"garden" in after  # what was not erased is still there to find


def test_a_reader_holding_the_wal_is_named_in_the_receipt(tmp_path: object) -> None:
    path = f"{tmp_path}/m.db"
    with open_store(f"sqlite:///{path}", embedder=HashEmbedder(), timeout=0.2) as opened:
        opened.write([said("a", f"{SECRET} is my cat.")])
        opened.write([said("b", "I drink tea.")])
        with closing(sqlite3.connect(path)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM memories").fetchone()  # holds a snapshot
            receipt = opened.delete("a", user_id="u1", erase=True)
            reader.execute("COMMIT")
    assert any("blocked" in step for step in receipt.file_steps)
    after = _file_bytes(path)  # the last connection's close checkpointed the WAL
    assert SECRET.encode() not in after and SECRET.lower().encode() not in after


_WORDS = ["alpha", "bravo", "carmine", "delta", "ember", "fjord", "garnet", "harbor"]


@settings(max_examples=25, deadline=None)
@given(
    said_in=st.lists(
        st.sets(st.sampled_from(["s1", "s2", "s3"]), min_size=1, max_size=3),
        min_size=1,
        max_size=6,
    ),
    updated=st.sets(st.integers(0, 5), max_size=3),
    forgotten=st.sampled_from(["s1", "s2", "s3"]),
    by_id=st.sets(st.integers(0, 5), max_size=2),
)
def test_erasure_removes_exactly_what_only_it_covers(
    said_in: list[set[str]], updated: set[int], forgotten: str, by_id: set[int]
) -> None:
    """Memories said in some sessions (one word of their own each), some updated: erasing a few
    by id, then forgetting a session with ``erase``, leaves none of the erased memories' words in
    any table, erases exactly the memories that session alone supported, and keeps the rest."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/m.db"
        with open_store(url, embedder=HashEmbedder()) as store:
            word = {}
            for n, sessions in enumerate(said_in):
                word[f"m{n}"] = f"{_WORDS[n]}{n}qx"
                for k, session in enumerate(sorted(sessions)):  # the same text: reinforced
                    text = f"I keep a {word[f'm{n}']} in the shed."
                    item_id = f"m{n}" if k == 0 else f"m{n}-{session}"
                    store.write([said(item_id, text, session=session, message=f"{n}-{k}")])
            for n in sorted(updated & set(range(len(said_in)))):
                store.update(f"m{n}", f"I sold the thing {n}.", user_id="u1")
            erased = set()
            for n in sorted(by_id & set(range(len(said_in)))):
                erased |= set(store.delete(f"m{n}", user_id="u1", erase=True).erased)
            only_there = {
                f"m{n}"
                for n, sessions in enumerate(said_in)
                if sessions == {forgotten} and f"m{n}" not in erased
            }
            receipt = store.forget(SourceSelector(session_id=forgotten), user_id="u1", erase=True)
            originals = {i for i in receipt.erased if i in word}
            assert originals == only_there
            erased |= originals
            dump = everything(url).lower()
            for memory_id in erased:
                assert word[memory_id] not in dump, memory_id
            for memory_id in set(word) - erased:
                assert store.get(memory_id, user_id="u1") is not None
