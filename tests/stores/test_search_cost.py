"""What made a search cheaper (issue 42) changed nothing it finds: the SQLite store's
full-text list ranks as FTS5's own ``ORDER BY bm25(...)`` does (it now sums each word's
``bm25``, kept between writes), a word seen since the last write is not ranked again (counted
in statements, not timed), and the hits of a fixture store are the ones the code before the
change gave, in the same order with the same scores (pinned below)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import MemoryStore, open_store
from memreader.stores.shapes import memory_json
from memreader.stores.sqlite.candidates import cosines, ranking
from memreader.stores.sqlite.vectors import OwnerVectors, VectorRow, to_blob, unit
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item

pytestmark = pytest.mark.timeout(120)

#: Few words, so that many memories hold the same ones: bm25 ties, and words in many rows.
WORDS = [
    "tea",
    "porto",
    "lisbon",
    "piano",
    "chess",
    "harbour",
    "train",
    "river",
    "garden",
    "violin",
]
NAMES = ["Ana", "Bo", "Caro"]


def _chat(item_id: str, rng: random.Random, session: str, user: str) -> TextualMemoryItem:
    """A three-message window, each line ``user (Name): [9:0i]: words``."""
    text, sources = "", []
    for index in range(3):
        content = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
        text += ("\n" if text else "") + f"user ({rng.choice(NAMES)}): [9:0{index}]: {content}"
        sources.append(
            SourceMessage(
                scene_index=0, message_index=index, span=(0, len(content)), content=content
            )
        )
    meta = TextualMemoryItemMetadata(user_id=user, session_id=session, sources=sources)
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def fill(store: MemoryStore) -> None:
    """60 memories of ``u1`` (single lines and chat windows, four sessions) and 20 of ``u2``
    holding the same words, written at :data:`T0`."""
    rng = random.Random(42)
    items = []
    for n in range(80):
        user = "u1" if n < 60 else "u2"
        session = f"s{n % 4}"
        if n % 3 == 0:
            items.append(_chat(f"m{n}", rng, session, user))
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
            items.append(item(f"m{n}", text, user=user, session=session))
    store.write(items, now=T0)


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[MemoryStore]:
    with open_store(f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder()) as store:
        fill(store)
        yield store


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("tea", {}),
    ("porto lisbon", {}),
    ("Where did Ana play chess?", {}),
    ("harbour train river", {"k": 5}),
    ("violin garden", {"mode": "text"}),
    ("piano tea", {"mode": "vector"}),
    ("river", {"min_score": 0.3}),
    ("chess piano violin", {"session_id": "s2"}),
]

#: What each of :data:`QUERIES` found for ``u1`` with the code before issue 42 (id, final
#: score to 9 places, rank in the full-text list), searched 3 days after :data:`T0`.
EXPECTED: list[list[tuple[str, float, int | None]]] = [
    [
        ("m31", 0.962958994, 1),
        ("m57", 0.820399891, 16),
        ("m26", 0.810259044, 2),
        ("m40", 0.809599269, 3),
        ("m28", 0.77089524, 5),
        ("m22", 0.756710373, 4),
        ("m0", 0.745341198, 11),
        ("m23", 0.732800809, 6),
        ("m42", 0.723038626, 18),
        ("m21", 0.686624768, 25),
    ],
    [
        ("m12", 0.968607681, 10),
        ("m45", 0.861985482, 4),
        ("m32", 0.831128563, 1),
        ("m36", 0.799270197, 19),
        ("m0", 0.76020447, 26),
        ("m39", 0.754599192, 27),
        ("m7", 0.723516799, 2),
        ("m15", 0.678465111, 24),
        ("m16", 0.665580482, 5),
        ("m48", 0.655929871, 44),
    ],
    [
        ("m3", 0.309982932, 6),
        ("m51", 0.292219812, 8),
        ("m56", 0.285560022, 24),
        ("m39", 0.275711403, 12),
        ("m15", 0.265940712, 4),
        ("m0", 0.249513929, 2),
        ("m27", 0.248967393, 3),
        ("m48", 0.246766666, 7),
        ("m6", 0.240074866, 5),
        ("m12", 0.235465234, 14),
    ],
    [
        ("m27", 0.516617304, 7),
        ("m47", 0.464006038, 1),
        ("m25", 0.414474742, 10),
        ("m49", 0.399501473, 27),
        ("m10", 0.394898666, 5),
    ],
    [
        ("m20", 0.962958994, 1),
        ("m24", 0.940591767, 8),
        ("m7", 0.87997345, 2),
        ("m50", 0.879821546, 3),
        ("m12", 0.842798336, 10),
        ("m14", 0.833557984, 4),
        ("m55", 0.833415355, 5),
        ("m16", 0.82174189, 6),
        ("m34", 0.793998158, 7),
        ("m54", 0.780076866, 11),
    ],
    [
        ("m55", 0.657922293, None),
        ("m50", 0.618184167, None),
        ("m31", 0.55645263, None),
        ("m14", 0.553765012, None),
        ("m39", 0.504829975, None),
        ("m32", 0.461867808, None),
        ("m41", 0.416587217, None),
        ("m42", 0.378955189, None),
        ("m6", 0.353774533, None),
        ("m24", 0.343902288, None),
    ],
    [
        ("m54", 0.967466263, 12),
        ("m10", 0.887786199, 1),
        ("m30", 0.80675724, 14),
        ("m46", 0.792455244, 3),
        ("m18", 0.69007459, 15),
        ("m59", 0.681121737, 2),
        ("m27", 0.680330581, 17),
        ("m21", 0.620299937, 16),
        ("m47", 0.612317496, 6),
        ("m37", 0.605666725, 7),
    ],
    [
        ("m34", 0.972685853, 1),
        ("m54", 0.766800664, 4),
        ("m6", 0.758532833, 8),
        ("m2", 0.734406441, 2),
        ("m14", 0.733547058, 3),
        ("m22", 0.720357045, 5),
        ("m30", 0.703588596, 7),
        ("m18", 0.657758674, 9),
        ("m38", 0.579064026, 10),
        ("m46", 0.488425096, 11),
    ],
]


def test_the_fixture_stores_hits_are_the_ones_found_before(filled: MemoryStore) -> None:
    for (query, options), expected in zip(QUERIES, EXPECTED, strict=True):
        hits = filled.search(query, user_id="u1", now=T0 + timedelta(days=3), **options)
        found = [(h.memory.id, h.score.final, h.score.text_rank) for h in hits]
        assert [(i, rank) for i, _, rank in found] == [(i, rank) for i, _, rank in expected]
        for (_, final, _), (_, pinned, _) in zip(found, expected, strict=True):
            assert math.isclose(final, pinned, abs_tol=1e-8), query


def _fts5_order(store: MemoryStore, words: list[str], owner: str, extra: str = "") -> list[str]:
    """The ids FTS5's own ranking gives: the query the store ran before issue 42."""
    match = " OR ".join(f'"{w}"' for w in words)
    rows = store._conn.execute(  # type: ignore[attr-defined]
        "SELECT m.id FROM memories_terms f JOIN memories m ON m.rowid = f.rowid "
        f"WHERE memories_terms MATCH ? AND m.user_id = ? AND m.status = 'active'{extra} "
        "ORDER BY bm25(memories_terms)",
        (match, owner),
    )
    return [r[0] for r in rows]


def _text_list(store: MemoryStore, query: str, owner: str, **options: object) -> list[str]:
    """Every full-text match of ``query`` as the search ranked them (by ``text_rank``)."""
    hits = store.search(query, user_id=owner, k=100, mode="text", **options)  # type: ignore[arg-type]
    return [h.memory.id for h in sorted(hits, key=lambda h: h.score.text_rank or 0)]


def test_the_full_text_list_ranks_as_fts5s_bm25_with_its_ties(filled: MemoryStore) -> None:
    rng = random.Random(7)
    for _ in range(40):
        words = rng.sample(WORDS, rng.randint(1, 4))
        query = " ".join(words)
        for owner in ("u1", "u2"):
            assert _text_list(filled, query, owner) == _fts5_order(filled, words, owner)
        assert _text_list(filled, query, "u1", session_id="s1") == _fts5_order(
            filled, words, "u1", " AND m.session_id = 's1'"
        )
    # A write changes every word's bm25 (row count, lengths): the kept scores are dropped.
    filled.write([item("late", "tea tea tea porto", session="s1")], now=T0)
    assert _text_list(filled, "tea porto", "u1") == _fts5_order(filled, ["tea", "porto"], "u1")
    assert _text_list(filled, "tea porto", "u1")[0] == "late"


def test_a_word_seen_since_the_last_write_is_not_ranked_again(filled: MemoryStore) -> None:
    statements: list[str] = []
    conn = filled._conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)

    def bm25_reads(query: str) -> int:
        statements.clear()
        filled.search(query, user_id="u1", k=5)
        return sum("bm25(" in s for s in statements)

    try:
        assert bm25_reads("tea chess") == 2  # one statement per new word
        assert bm25_reads("chess tea river") == 1  # river only
        assert bm25_reads("river tea") == 0
        filled.write([item("new", "tea at the river")], now=T0)
        assert bm25_reads("river tea") == 2
    finally:
        conn.set_trace_callback(None)


def test_a_memorys_json_leaves_its_vector_out_as_before(filled: MemoryStore) -> None:
    """memory_json leaves the embedding out in the serializer (issue 42): the same dict, key
    order included, as dumping the item whole then dropping it; with ``embedding`` it stays."""
    hits = filled.search("tea porto", user_id="u1", k=5)
    assert hits and all(h.memory.item.metadata.embedding for h in hits)
    for hit in hits:
        whole = hit.memory.item.to_dict()
        shown = memory_json(hit.memory)
        assert "embedding" not in shown["item"]["metadata"]
        whole["metadata"].pop("embedding")
        assert json.dumps(shown["item"]) == json.dumps(whole)
        assert memory_json(hit.memory, embedding=True)["item"] == hit.memory.item.to_dict()


def _walled(n: int, rng: random.Random) -> TextualMemoryItem:
    """A memory of ``u1`` (or ``u2``) with a random type, session, agent, task and visibility."""
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
    made = item(
        f"w{n}",
        text,
        user="u1" if n < 45 else "u2",
        session=f"s{n % 3}",
        memory_type=rng.choice(["LongTermMemory", "UserMemory"]),
    )
    meta = made.metadata.model_copy(
        update={
            "agent_id": rng.choice([None, "a1", "a2"]),
            "task_id": rng.choice([None, "t1"]),
            "visibility": rng.choice(["private", "shared"]),
        }
    )
    return made.model_copy(update={"metadata": meta})


def test_the_full_text_list_under_each_filter_is_the_one_sql_keeps(tmp_path: Path) -> None:
    """The text list's owner and filter check is answered from the owner's cached vectors
    where they hold the row (issue 42): under every filter it keeps exactly the rows the
    SQL filter keeps, in FTS5's order, and for the owner's rows it runs no statement."""
    from memreader.stores.category_api import link_categories, upsert_categories
    from memreader.stores.category_types import CategoryDef

    rng = random.Random(11)
    with open_store(f"sqlite:///{tmp_path}/w.db", embedder=HashEmbedder()) as store:
        store.write([_walled(n, rng) for n in range(60)], now=T0)
        upsert_categories(store, "u1", [CategoryDef(name="food", description="What one eats.")])
        link_categories(store, "u1", {f"w{n}": ["food"] for n in range(0, 45, 4)})
        scope = " AND (m.{0} IN ('', '{1}') OR m.{0} IS NULL OR m.visibility = 'shared')"
        cases: list[tuple[dict[str, Any], str]] = [
            ({}, ""),
            ({"types": ["UserMemory"]}, " AND m.memory_type = 'UserMemory'"),
            ({"session_id": "s1"}, " AND m.session_id = 's1'"),
            ({"agent_id": "a1"}, scope.format("agent_id", "a1")),
            (
                {"agent_id": "a2", "task_id": "t1"},
                scope.format("agent_id", "a2") + scope.format("task_id", "t1"),
            ),
            (
                {"category": "food"},
                " AND m.id IN (SELECT memory_id FROM category_links WHERE name = 'food')",
            ),
        ]
        for _ in range(15):
            words = rng.sample(WORDS, rng.randint(1, 3))
            for options, extra in cases:
                found = _text_list(store, " ".join(words), "u1", **options)
                assert found == _fts5_order(store, words, "u1", extra), options
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        try:
            store.search("tea porto", user_id="u1", k=10, mode="text")
        finally:
            store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
        # u2's rows holding the words are checked by a statement; u1's are not.
        checks = [s for s in statements if "NOT INDEXED" in s]
        conn = store._conn  # type: ignore[attr-defined]
        u1_rows = {r[0] for r in conn.execute("SELECT rowid FROM memories WHERE user_id = 'u1'")}
        for check in checks:
            listed = check.split("IN (", 1)[1].split(")", 1)[0]
            assert not {int(x) for x in listed.split(",")} & u1_rows


def test_the_candidates_read_from_the_cache_are_what_their_rows_hold() -> None:
    # ranking() gathers one group's columns at once and falls back to row by row across
    # groups: either way each candidate is (rowid, importance, time, cosine) as cosines() and
    # the cached rows give them, rowid ascending; a rowid not cached sends the caller to SQL.
    rng = random.Random(5)
    owned = OwnerVectors(version=1)
    rows: list[VectorRow] = []
    for rowid in range(1, 41):
        dim = 4 if rowid % 5 else 6  # a few rows of another model's dimension
        blob = to_blob([rng.uniform(-1, 1) for _ in range(dim)])
        importance = None if rowid % 7 == 0 else rng.random()
        moment = T0 + timedelta(days=rowid)
        rows.append((rowid, blob, "active", "UserMemory", "s", 0.0, "m", ("", "", ""),
                     importance, moment))  # fmt: skip
    assert owned.update(rows)
    query = unit([rng.uniform(-1, 1) for _ in range(4)])
    held = {row[0]: (row[8], row[9]) for row in rows}

    def expected(rowids: list[int], q: Any) -> list[Any]:
        order = sorted(rowids)
        similar = cosines(owned, order, q) if q is not None else [None] * len(order)
        return [(r, *held[r], s) for r, s in zip(order, similar, strict=True)]

    one_group = [r for r in range(40, 0, -1) if r % 5]
    across = [3, 10, 1, 25, 7]
    for rowids in (one_group, across, [5, 15]):
        assert ranking(owned, rowids, query) == expected(rowids, query)
        assert ranking(owned, rowids, None) == expected(rowids, None)
    assert [c[3] for c in ranking(owned, [5, 15], query) or []] == [None, None]  # other dim
    assert ranking(owned, [1, 2, 99], query) is None
