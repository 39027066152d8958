"""The scale of search scores (issue 30): every score lies in [0, 1] whatever the candidates;
a memory's relevance is its best passage's match, not its place among the query's candidates,
so a query about nothing stored scores low, below the recommended ``min_score``, with the
bundled model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memreader.retrieval.passages import Passage
from memreader.stores import open_store
from memreader.stores.passages.scoring import (
    OWN_VECTOR,
    SESSION_WEIGHT,
    PassageSet,
    calibrated,
    rank_by_passages,
    score_passages,
    span_rows,
)
from memreader.stores.scoring import RECOMMENDED_MIN_SCORE, final_score

T = datetime(2026, 1, 1, tzinfo=timezone.utc)

unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def candidates(
    draw: st.DrawFn,
) -> tuple[list[PassageSet], list[tuple[object, ...]], dict[int, list[int]]]:
    count = draw(st.integers(min_value=1, max_value=8))
    sets, rows, ranks = [], [], {}
    words = st.sampled_from(["porto", "tea", "the", "ana", "咖啡", "ｐｏｒｔｏ", "moved", "x"])
    for rowid in range(1, count + 1):
        parts = draw(st.lists(st.lists(words, min_size=1, max_size=5), min_size=1, max_size=4))
        text, passages = "", []
        for part in parts:
            start = len(text) + (1 if text else 0)
            text = f"{text}\n{' '.join(part)}" if text else " ".join(part)
            passages.append(Passage(start, len(text), None))
        dim = 4
        has_vectors = draw(st.booleans())
        vectors = None
        if has_vectors:
            raw = (
                np.asarray(
                    draw(
                        st.lists(
                            st.floats(-1, 1),
                            min_size=dim * len(passages),
                            max_size=dim * len(passages),
                        )
                    ),
                    dtype=np.float32,
                ).reshape(len(passages), dim)
                + 1e-3
            )
            vectors = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        cosine = draw(st.one_of(st.none(), st.floats(-1, 1)))
        sets.append(PassageSet(rowid, text, span_rows(passages), vectors, cosine))
        importance = draw(st.one_of(st.none(), unit))
        age = draw(st.floats(min_value=0, max_value=5000))
        rows.append((rowid, importance, T - timedelta(days=age), cosine))
        ranks[rowid] = draw(st.lists(st.integers(1, 100), min_size=1, max_size=2))
    return sets, rows, ranks


@settings(max_examples=150, deadline=None)
@given(
    candidates(),
    st.sampled_from(["porto tea", "咖啡", "what about Ana?", "", "x x"]),
    st.booleans(),
    st.floats(min_value=0.0, max_value=1.99),
)
def test_every_score_lies_in_0_1(drawn, query: str, with_vector: bool, weight: float) -> None:  # type: ignore[no-untyped-def]
    sets, rows, ranks = drawn
    vector = np.asarray([0.5, 0.5, 0.5, 0.5], dtype=np.float32) if with_vector else None
    text_ranks = {rowid: r[0] for rowid, r in ranks.items()}
    scored, passages = rank_by_passages(
        query, vector, sets, (rows, ranks, text_ranks), (T, 0.999, weight), None
    )
    assert len(scored) == len(rows)
    for _, parts in scored:
        assert 0.0 <= parts.final <= 1.0 and 0.0 <= parts.relevance <= 1.0
    for found in passages.values():
        assert all(0.0 <= hit.score <= 1.0 for hit in found.hits())
    finals = [parts.final for _, parts in scored]
    assert finals == sorted(finals, reverse=True)


@settings(max_examples=100, deadline=None)
@given(
    candidates(),
    st.sampled_from(["porto tea", "what about Ana?", ""]),
    st.one_of(st.none(), st.floats(0.0, 1.0)),
    st.integers(1, 9),
)
def test_a_limit_and_a_min_score_cut_the_full_ranking(  # type: ignore[no-untyped-def]
    drawn, query: str, min_score: float | None, limit: int
) -> None:
    # The score parts are made only for the hits kept: the same hits, parts and order as
    # ranking every candidate, then filtering and cutting; each hit's passage score is its
    # best passage's.
    sets, rows, ranks = drawn
    vector = np.asarray([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    lists = (rows, ranks, {rowid: r[0] for rowid, r in ranks.items()})
    every, passages = rank_by_passages(query, vector, sets, lists, (T, 0.999, 0.05), None)
    cut, _ = rank_by_passages(query, vector, sets, lists, (T, 0.999, 0.05), min_score, limit)
    kept = [hit for hit in every if min_score is None or hit[1].relevance >= min_score]
    assert cut == kept[:limit]
    assert all(parts.passage == passages[rowid].best for rowid, parts in every)


def test_a_memory_without_passages_ranks_on_its_places_alone() -> None:
    sets = [
        PassageSet(1, "ana moved to porto", span_rows([Passage(0, 18)]), None, None),
        PassageSet(2, "", span_rows([]), None, None),
    ]
    rows = [(1, None, T, None), (2, None, T, None)]
    lists = (rows, {1: [2], 2: [1]}, {1: 2, 2: 1})
    scored, passages = rank_by_passages("porto", None, sets, lists, (T, 0.999, 0.05), None, 5)
    parts = dict(scored)
    assert parts[1].passage == 1.0 and parts[2].passage is None and passages[2].best is None
    assert parts[2].relevance > 0.0  # its places in the lists still count


def test_the_scales_ends() -> None:
    assert calibrated(-1.0) == 0.0 and calibrated(1.0) == 1.0
    assert final_score(1.0, 1.0, 1.0, 1.99) == 1.0  # the most important memory keeps its match
    assert final_score(1.0, 0.0, 1.0, 1.99) > 0.0  # the least important never drops to zero


def test_min_score_filters_in_rank_by_passages() -> None:
    sets = [
        PassageSet(1, "ana moved to porto", span_rows([Passage(0, 18)]), None, None),
        PassageSet(2, "bo plays chess", span_rows([Passage(0, 14)]), None, None),
    ]
    rows = [(1, None, T, None), (2, None, T, None)]
    lists = (rows, {1: [1], 2: [2]}, {1: 1, 2: 2})
    scored, _ = rank_by_passages("porto chess ana", None, sets, lists, (T, 0.999, 0.05), 0.5)
    assert [rowid for rowid, _ in scored] == [1]


LINES = [
    ("user", "I finally adopted a beagle puppy last weekend and named him Biscuit."),
    ("assistant", "Biscuit is a lovely name! How is he settling in?"),
    ("user", "My sister Laura is getting married in Lisbon next June."),
    ("assistant", "Congratulations to her! Lisbon is a beautiful place for a wedding."),
    ("user", "I switched jobs, I now work as a data analyst at a hospital downtown."),
    ("assistant", "That sounds like a meaningful change."),
]


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from memreader.embedders import build_embedder
    from tests.stores.store_backends import chat

    embedder = build_embedder({"backend": "local"})
    path = Path(tmp_path_factory.mktemp("minilm")) / "m.db"
    store = open_store(f"sqlite:///{path}", embedder=embedder)
    store.write([chat("w1", LINES[:4]), chat("w2", LINES[2:])], now=T)
    yield store
    store.close()


@pytest.mark.parametrize(
    "query",
    [
        "How do I configure a Kubernetes ingress controller with TLS?",
        "What is the boiling point of tungsten?",
        "difference between TCP and UDP congestion control",
    ],
)
def test_an_unrelated_query_scores_below_the_recommended_cut(minilm_store, query: str) -> None:  # type: ignore[no-untyped-def]
    hits = minilm_store.search(query, user_id="u1", now=T)
    assert hits and all(h.score.relevance < RECOMMENDED_MIN_SCORE for h in hits)
    assert minilm_store.search(query, user_id="u1", now=T, min_score=RECOMMENDED_MIN_SCORE) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("What is the name of the dog I got?", 0),
        ("Where is my sister's wedding taking place?", 2),
        ("What is my current occupation?", 4),
    ],
)
def test_a_related_question_passes_the_cut_naming_its_message(  # type: ignore[no-untyped-def]
    minilm_store, query: str, message: int
) -> None:
    # A message read with its neighbours shares their match: the reply to a statement may
    # rank beside it (measured best on real conversations, see scoring.OWN_VECTOR), so the
    # message is among the hit's two best passages.
    hits = minilm_store.search(query, user_id="u1", now=T, min_score=RECOMMENDED_MIN_SCORE)
    assert hits, query
    sources = hits[0].memory.item.metadata.sources
    best = [sources[p.source_index].content for p in hits[0].passages[:2]]
    assert LINES[message][1] in best, best


CLIMBING = [
    ("user", "The weather was grey all week, so I stayed in."),
    ("assistant", "Grey weeks are good for reading."),
    ("user", "I finally picked a climbing gym to join."),
    ("assistant", "Oh nice, which one did you go for?"),
    ("user", "Crux Hall, the one by the old train station."),
    ("assistant", "That sounds like a good choice."),
    ("user", "I finished two novels and started a third one."),
    ("assistant", "Which one did you like best?"),
]


def test_an_answer_without_the_questions_words_is_read_with_its_question(
    tmp_path: Path,
) -> None:
    """The answer ("Crux Hall, ...") shares no word with the question; the question it answers
    ("which one did you go for?") is read with the message naming the gym, so it scores high,
    and ``context()`` takes the answer with it as its neighbour, while the window's messages
    far from that exchange score lower than the answer."""
    from memreader.embedders import build_embedder
    from tests.stores.store_backends import chat

    with open_store(
        f"sqlite:///{tmp_path / 'm.db'}", embedder=build_embedder({"backend": "local"})
    ) as store:
        store.write([chat("w", CLIMBING)], now=T)
        question = "Which climbing gym did I join?"
        hit = store.search(question, user_id="u1", now=T)[0]
        block = store.context(question, user_id="u1", max_tokens=120)
    sources = hit.memory.item.metadata.sources
    score = {
        sources[p.source_index].content: p.score for p in hit.passages if p.source_index is not None
    }
    answer = score[CLIMBING[4][1]]
    unrelated = [CLIMBING[i][1] for i in (0, 6, 7)]  # not next to the question's exchange
    assert all(answer > score[text] for text in unrelated), score
    assert score[CLIMBING[3][1]] > 0.5  # the question it answers
    assert CLIMBING[4][1] in block.text, block.text


def test_a_passage_with_two_vectors_blends_them() -> None:
    """A chat message's row holds two vectors side by side (the message alone, and read with
    its neighbours); its cosine is their blend (OWN_VECTOR of its own), and a one-vector row
    scores by its one."""
    e = np.eye(4, dtype=np.float32)
    spans = span_rows([Passage(0, 1, 0), Passage(2, 3, 1), Passage(4, 5, 2)])
    two = PassageSet(
        1,
        "a b c",
        spans,
        np.stack([np.hstack([e[1], e[0]]), np.hstack([e[0], e[1]]), np.hstack([e[1], e[2]])]),
        None,
    )
    one = PassageSet(2, "a b c", spans, np.stack([e[0], e[1], e[2]]), None)
    scored = score_passages("", e[0], [two, one], lexical_weight=0.0)
    blended = [calibrated(1 - OWN_VECTOR), calibrated(OWN_VECTOR), 0.0]

    def with_memorys_best(scores: list[float]) -> list[float]:  # no session: the memory's
        return [(x + SESSION_WEIGHT * max(scores)) / (1 + SESSION_WEIGHT) for x in scores]

    assert scored[1].scores.tolist() == pytest.approx(with_memorys_best(blended))
    assert scored[2].scores.tolist() == pytest.approx(with_memorys_best([1.0, 0.0, 0.0]))
