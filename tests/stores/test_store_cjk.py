"""Full-text search in Chinese, Japanese and Korean, and with full-width or upper-case Latin
(issue 30), on both backends (tests/stores/conftest.py): a memory is indexed by its terms
(memreader.retrieval.terms: NFKC- and case-folded, CJK as bigrams), so a word inside a clause
written without spaces is found, in text mode and in hybrid search; and a store made by the
schema before (which indexed the raw text) is upgraded when opened and then finds it too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import StoreError
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item, sql

pytestmark = pytest.mark.timeout(300)

#: What every search below runs against: each case's memory among these.
TEXTS = {
    "coffee": "咖啡",
    "zh": "我每天早上在北京大学附近的咖啡店喝一杯拿铁",
    "tea": "我喜欢喝绿茶，不喜欢喝红茶",
    "ja": "東京の喫茶店でコーヒーを飲みました",
    "ko": "저는 매일 아침 커피를 마셔요",
    "porto": "Ana moved to ｐｏｒｔｏ last spring",
    "mixed": "周末和Ana在Lisbon看了一场足球比赛",
    "en": "Bo walks the dog in the park every morning",
    "cat": "我家的猫很可爱",
}


@pytest.fixture
def cjk_store(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item(key, text) for key, text in TEXTS.items()], now=T0)
        yield store


def _text_ids(store: MemoryStore, query: str, user: str = "u1") -> list[str]:
    return [h.memory.id for h in store.search(query, user_id=user, mode="text", now=T0)]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("咖啡", "coffee"),  # the two-character word alone: its own memory is the best match
        ("北京", "zh"),  # two characters inside a long clause
        ("拿铁", "zh"),
        ("北京大学", "zh"),  # four: three bigrams, all in the clause
        ("喝绿茶", "tea"),  # three
        ("コーヒー", "ja"),  # katakana with the long-vowel mark
        ("東京", "ja"),  # kanji
        ("喫茶店", "ja"),
        ("커피", "ko"),  # Hangul, the particle 를 glued to the word
        ("porto", "porto"),  # stored full-width
        ("PORTO", "porto"),
        ("Ｐｏｒｔｏ", "porto"),
        ("lisbon 足球", "mixed"),  # Latin and Chinese in one run of the stored text
        ("猫", "cat"),  # one character: matched as a prefix of the run's bigrams
        ("爱", "cat"),  # one character at a run's end
        ("dog", "en"),
    ],
)
def test_text_search_finds_cjk_and_folded_words(
    cjk_store: MemoryStore, query: str, found: str
) -> None:
    assert _text_ids(cjk_store, query)[0] == found


def test_a_cjk_word_finds_only_the_memories_that_hold_it(cjk_store: MemoryStore) -> None:
    assert sorted(_text_ids(cjk_store, "咖啡")) == ["coffee", "zh"]
    assert _text_ids(cjk_store, "红茶") == ["tea"]
    assert _text_ids(cjk_store, "乌龙") == []  # neither character is stored
    assert _text_ids(cjk_store, "park") == ["en"]


def test_hybrid_search_ranks_the_cjk_text_match(cjk_store: MemoryStore) -> None:
    # The full-text half of hybrid search finds the CJK match first (the hash embedder's
    # cosines say nothing, so the fused order is not asserted here; with a real model the
    # passage scores decide: tests/stores/test_passage_scoring.py).
    hits = cjk_store.search("东京的咖啡 東京 コーヒー", user_id="u1", now=T0)
    ja = next(hit for hit in hits if hit.memory.id == "ja")
    assert ja.score.text_rank == 1 and ja.score.similarity is not None
    assert ja.passages and ja.score.passage is not None and ja.score.passage > 0
    text = cjk_store.search("东京的咖啡 東京 コーヒー", user_id="u1", mode="text", now=T0)
    assert text[0].memory.id == "ja"


def test_deleted_and_erased_memories_leave_cjk_results(cjk_store: MemoryStore) -> None:
    cjk_store.delete("coffee", user_id="u1")
    cjk_store.delete("zh", user_id="u1", erase=True)
    assert _text_ids(cjk_store, "咖啡") == []
    hits = cjk_store.search("咖啡", user_id="u1", mode="text", include_inactive=True)
    assert [h.memory.id for h in hits] == ["coffee"]  # expired, still indexed; erased: gone
    cjk_store.write([item("latte", "一杯咖啡")], now=T0)
    assert _text_ids(cjk_store, "咖啡") == ["latte"]


# -- any substring finds its memory ------------------------------------------------------

#: Hiragana, katakana (with the long-vowel mark, not the middle dot: punctuation), the main Han
#: block and Hangul syllables.
_CJK = st.one_of(
    [
        st.characters(min_codepoint=low, max_codepoint=high)
        for low, high in (
            (0x3041, 0x3096),
            (0x30A1, 0x30FA),
            (0x30FC, 0x30FC),
            (0x4E00, 0x9FFF),
            (0xAC00, 0xD7A3),
        )
    ]
)
_RUN = st.text(_CJK, min_size=1, max_size=12)
_OWNERS = itertools.count()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    runs=st.lists(_RUN, min_size=1, max_size=4),
    glue=st.sampled_from([" ", "，", "。", " and ", "7"]),
    others=st.lists(st.lists(_RUN, min_size=1, max_size=3), max_size=3),
    data=st.data(),
)
def test_any_cjk_substring_of_a_stored_text_finds_it(
    store: MemoryStore,
    runs: list[str],
    glue: str,
    others: list[list[str]],
    data: st.DataObject,
) -> None:
    run = data.draw(st.sampled_from([r for r in runs if len(r) >= 2] or ["skip"]))
    if run == "skip":
        return
    start = data.draw(st.integers(0, len(run) - 2))
    end = data.draw(st.integers(start + 2, len(run)))
    owner = f"p{next(_OWNERS)}"
    texts = [glue.join(runs)] + [" ".join(other) for other in others]
    store.write(
        [item(f"t{n}", text, user=owner) for n, text in enumerate(dict.fromkeys(texts))],
        now=T0,
    )
    assert "t0" in _text_ids(store, run[start:end], owner)
    assert "t0" in _text_ids(store, run[start], owner)  # one character, as a prefix


# -- a store made by the schema before ---------------------------------------------------

#: Schema 1's text index, put back by hand: SQLite's FTS5 table over the raw text, PostgreSQL's
#: generated column (and the version stamp that says so).
_SCHEMA_1 = {
    "sqlite": [
        "DROP TABLE memories_terms",
        "CREATE VIRTUAL TABLE memories_fts USING fts5 (memory)",
        "INSERT INTO memories_fts (rowid, memory) SELECT rowid, memory FROM memories",
        "UPDATE memreader_meta SET value = '1' WHERE key = 'schema'",
    ],
    "postgresql": [
        "ALTER TABLE memreader_memories DROP COLUMN fts",
        "ALTER TABLE memreader_memories ADD COLUMN fts tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple', memory)) STORED",
        "CREATE INDEX memreader_memories_fts ON memreader_memories USING gin (fts)",
        "UPDATE memreader_meta SET value = '1' WHERE key = 'schema'",
    ],
}


def test_a_store_of_the_schema_before_is_upgraded_and_finds_cjk(backend: str, url: str) -> None:
    with open_store(url, text_only=True) as store:
        store.write([item(key, text) for key, text in TEXTS.items()], now=T0)
        store.delete("tea", user_id="u1")
    for statement in _SCHEMA_1[backend]:
        sql(url, statement)
    with open_store(url, text_only=True) as store:  # upgraded here
        assert sorted(_text_ids(store, "咖啡")) == ["coffee", "zh"]
        assert _text_ids(store, "東京")[0] == "ja" and _text_ids(store, "porto") == ["porto"]
        assert _text_ids(store, "dog") == ["en"] and _text_ids(store, "红茶") == []
        retired = store.search("红茶", user_id="u1", mode="text", include_inactive=True)
        assert [h.memory.id for h in retired] == ["tea"]  # every stored row was indexed
        store.write([item("new", "新的记忆：乌龙茶")], now=T0)
        assert _text_ids(store, "乌龙") == ["new"]
    assert sql(url, "SELECT value FROM memreader_meta WHERE key = 'schema'") == [("3",)]
    if backend == "sqlite":
        assert sql(url, "SELECT name FROM sqlite_master WHERE name = 'memories_fts'") == []
    else:
        indexes = dict(sql(url, "SELECT indexname, indexdef FROM pg_indexes"))
        assert "USING gin (fts)" in indexes["memreader_memories_fts"]
    with open_store(url, text_only=True) as store:  # opened again: nothing left to upgrade
        assert sorted(_text_ids(store, "咖啡")) == ["coffee", "zh"]
    if backend == "sqlite":
        # An older memreader opening the file makes its empty index before refusing it; the
        # next open drops it again.
        sql(url, "CREATE VIRTUAL TABLE memories_fts USING fts5 (memory)")
        open_store(url, text_only=True).close()
        assert sql(url, "SELECT name FROM sqlite_master WHERE name = 'memories_fts'") == []


def test_a_store_of_an_unknown_schema_is_refused(backend: str, url: str) -> None:
    open_store(url, text_only=True).close()
    sql(url, "UPDATE memreader_meta SET value = '9' WHERE key = 'schema'")
    with pytest.raises(StoreError, match="has store schema 9; this memreader reads 3"):
        open_store(url, text_only=True)
