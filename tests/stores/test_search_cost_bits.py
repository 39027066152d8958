"""Code made cheaper for issue 42 computes the very floats the code before it computed: each
rewritten function is compared, bit for bit, with the code it replaced (kept here as the
reference) over many random inputs, so the ranking the retrieval was tuned with is unchanged."""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from memreader.stores import scoring
from memreader.stores.passages import words as passage_words_module
from memreader.stores.passages.scoring import (
    PassageSet,
    ScoredPassages,
    rank_by_passages,
    score_passages,
)
from memreader.stores.passages.words import WordPool, passage_words, word_match
from memreader.stores.sqlite.vectors import from_blob
from tests.stores.store_backends import T0


def _ranked_by_the_helpers(
    candidates: list[Any],
    ranks: dict[int, list[int]],
    now: Any,
    gamma: float,
    weight: float,
    matches: dict[int, float | None],
    heat: tuple[dict[int, float], float],
) -> list[tuple[float, float, int, float, float, float | None, float]]:
    """What :func:`rank_candidates` computed before its loop spelled out its helpers."""
    heats, heat_weight = heat
    out = []
    for rowid, stored, when, _ in candidates:
        importance = scoring.importance_of(stored)
        factor = scoring.decay(scoring.age_days(when, now), gamma)
        passage = matches.get(rowid)
        match = min(1.0, max(0.0, passage)) if passage is not None else 0.0
        fused = scoring.rrf_score(ranks[rowid])
        places = min(1.0, fused * (scoring.RRF_K + 1) / 2.0)
        relevance = (1.0 - scoring.RANK_WEIGHT) * match + scoring.RANK_WEIGHT * places
        used = heats.get(rowid, 0.0)
        final = scoring.heated(
            scoring.final_score(relevance, importance, factor, weight), used, heat_weight
        )
        out.append((final, fused, rowid, importance, factor, passage, relevance))
    out.sort(key=lambda hit: (-hit[0], -hit[1], hit[2]))
    return out


def test_ranking_candidates_gives_the_helpers_floats_bit_for_bit() -> None:
    """rank_candidates computes its scores inline (issue 42): the same floats, to the bit, as
    the scoring helpers they spell out, hence the same order, over many random candidates."""
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 60)
        candidates = [
            (
                rowid,
                rng.choice([None, 0.0, 1.0, rng.random()]),
                T0 - timedelta(days=rng.uniform(-2, 900), microseconds=rng.randint(0, 10**6)),
                rng.random(),
            )
            for rowid in range(n)
        ]
        ranks = {r: rng.sample(range(1, 120), rng.randint(1, 2)) for r in range(n)}
        matches = {r: rng.choice([None, -0.1, 1.2, rng.random()]) for r in range(n)}
        heat = ({r: rng.random() for r in range(n) if rng.random() < 0.3}, rng.choice([0.0, 0.2]))
        gamma, weight = rng.choice([0.999, 0.99, 1.0]), rng.choice([0.0, 0.05, 0.3])
        found = scoring.rank_candidates(
            candidates, ranks, {}, T0, gamma, weight, matches, heat, limit=None
        )
        expected = _ranked_by_the_helpers(candidates, ranks, T0, gamma, weight, matches, heat)
        assert [
            (p.final, p.fused, rowid, p.importance, p.decay, p.passage, p.relevance)
            for rowid, p in found
        ] == expected


def test_a_vector_read_back_is_the_same_floats_as_before() -> None:
    """from_blob reads a stored vector in one numpy call (issue 42): the same Python floats,
    bit for bit, as ``float()`` of each float32, specials included."""
    rng = np.random.default_rng(3)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], dtype="<f4")
    for size in (0, 1, 16, 384):
        values = np.concatenate([rng.standard_normal(size).astype("<f4"), specials])
        blob = values.tobytes()
        before = [float(x) for x in np.frombuffer(blob, dtype="<f4")]
        after = from_blob(blob)
        assert all(type(x) is float for x in after)
        assert struct.pack(f"<{len(after)}d", *after) == struct.pack(f"<{len(before)}d", *before)


def _word_match_before(terms: Sequence[str], pool: WordPool) -> np.ndarray:
    """word_match as it was before issue 42 (the reference)."""
    k1, b, near_share = 1.2, 0.75, passage_words_module.NEIGHBOUR_WORDS

    def bm25(tf: np.ndarray, lengths: np.ndarray, idf: float) -> np.ndarray:
        mean = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / mean))

    n = len(pool.counts)
    found = np.zeros(n, dtype=np.float64)
    if not terms or not n:
        return found
    wide = pool.around(pool.lengths)
    weights: dict[str, float] = {}
    held: dict[str, np.ndarray] = {}
    for term in terms:
        tf = np.fromiter((c.get(term, 0) for c in pool.counts), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if df:
            held[term] = tf
            own = bm25(tf, pool.lengths, weights[term])
            near = bm25(pool.around(tf), wide, weights[term])
            found += (1 - near_share) * own + near_share * near
    top = float(found.max())
    if top <= 0:
        return found
    best = int(found.argmax())
    share = sum(weights[t] for t, tf in held.items() if tf[best] > 0) / sum(weights.values())
    return found / top * share


VOCABULARY = ["tea", "porto", "moved", "piano", "river", "garden", "lisbon", "violin", "train"]


def _memory_text(rng: random.Random) -> tuple[str, np.ndarray]:
    """A memory of one to four lines, chat lines or plain, and its passages' spans."""
    lines = []
    for index in range(rng.randint(1, 4)):
        said = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(0, 6)))
        head = rng.choice(["", f"user (Ana): [9:0{index}]: ", f"assistant (Bo): [9:0{index}]: "])
        lines.append(head + said)
    text, spans, at = "\n".join(lines), [], 0
    for index, line in enumerate(lines):
        spans.append((at, at + len(line), index))
        at += len(line) + 1
    return text, np.array(spans, dtype=np.int64)


def test_word_match_gives_the_floats_it_gave_before() -> None:
    rng = random.Random(11)
    for _ in range(300):
        memories = [_memory_text(rng) for _ in range(rng.randint(0, 40))]
        pool = WordPool.of([passage_words(text, spans) for text, spans in memories])
        terms = list(dict.fromkeys(rng.sample([*VOCABULARY, "absent"], rng.randint(0, 5))))
        found, expected = word_match(terms, pool), _word_match_before(terms, pool)
        assert found.tobytes() == expected.tobytes(), terms


def _best_before(passages: dict[int, ScoredPassages]) -> dict[int, float | None]:
    """rank_by_passages's best passage of each candidate before issue 42 (the reference)."""
    return {rowid: found.best for rowid, found in passages.items()}


def test_ranking_by_passages_gives_what_scoring_every_candidate_gave() -> None:
    """rank_by_passages scores the pool once and makes the scored passages of the hits kept
    only (issue 42): the same ranking, and those hits' passages, as scoring every candidate
    with score_passages and ranking by each one's best."""
    rng = random.Random(13)
    unit = np.ones(4, dtype=np.float32) / 2
    for _ in range(150):
        sets = []
        for rowid in rng.sample(range(1, 500), rng.randint(1, 40)):
            text, spans = _memory_text(rng)
            cosine = rng.choice([None, rng.uniform(-0.2, 0.9)])
            sets.append(PassageSet(rowid, text, spans, None, cosine, None, rng.choice(["a", None])))
        query = " ".join(rng.sample(VOCABULARY, rng.randint(1, 3)))
        vector = rng.choice([None, unit])
        candidates = [
            (s.rowid, rng.random(), T0 - timedelta(days=rng.random() * 9), None) for s in sets
        ]
        ranks = {s.rowid: [rng.randint(1, 80)] for s in sets}
        lists = (candidates, ranks, {})
        weights = (T0, 0.999, 0.05)
        limit = rng.choice([None, 5])
        scored, passages = rank_by_passages(query, vector, sets, lists, weights, None, limit)
        every = score_passages(query, vector, sets, lexical_weight=None)
        expected = scoring.rank_candidates(
            *lists, *weights, _best_before(every), None, min_relevance=None, limit=limit
        )
        assert scored == expected
        assert sorted(passages) == sorted(rowid for rowid, _ in scored)
        for rowid, found in passages.items():
            assert found.scores.tobytes() == every[rowid].scores.tobytes()
            assert found.spans is every[rowid].spans
