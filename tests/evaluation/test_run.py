"""The runner (:mod:`memreader.evaluation.run`) through the public API with the real default
local embedder: a question in the evidence's own words is found first at both levels and held
at every budget; the rates add up; a kept store can be measured again without reading; the
result reads back equal from its JSON; and the checks behind each metric
(:mod:`memreader.evaluation.matching`) on hand-made hits."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memreader import Memory
from memreader.errors import InputError
from memreader.evaluation import (
    EvalResult,
    EvalSet,
    cites,
    evaluate,
    holds,
    load_eval_file,
    parse_eval_data,
    ranked_messages,
    report,
    to_json,
)
from memreader.evaluation.run import STORE_FILE
from memreader.retrieval.passages import PassageHit
from tests.evaluation.eval_files import locomo_samples, write

BUDGETS = (120, 500, 2000)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> EvalSet:
    return load_eval_file(write(tmp_path_factory.mktemp("file"), "locomo.json", locomo_samples()))


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kept") / "stores"


@pytest.fixture(scope="module")
def result(data: EvalSet, kept: Path) -> EvalResult:
    """The fixture file measured once with the defaults (the bundled local embedder)."""
    return evaluate(data, budgets=BUDGETS, store_dir=kept, miss_analysis=True)


def test_a_question_in_the_evidence_own_words_is_first_and_held_at_every_budget(
    result: EvalResult,
) -> None:
    parrot = result.questions[0]
    assert parrot.id == "conv-a#q1" and parrot.evidence == ("D1:3",)
    assert (parrot.memory_rank, parrot.message_rank) == (1, 1)
    assert parrot.held == dict.fromkeys(BUDGETS, True)
    assert not parrot.deep_searched  # found first: no miss analysis


def test_every_question_is_measured_and_the_rates_add_up(result: EvalResult) -> None:
    assert [c.id for c in result.conversations] == ["conv-a", "conv-b"]
    assert [len(c.questions) for c in result.conversations] == [5, 2]
    assert (result.recall_at, result.budgets, result.message_k) == ((1, 3, 10), BUDGETS, 50)
    for q in result.questions:
        assert set(q.held) == set(BUDGETS) and len(q.context_ms) == len(BUDGETS)
        assert q.memory_rank is None or 1 <= q.memory_rank <= 10
        assert q.deep_searched == (q.memory_rank != 1)
        if q.deep_searched and q.memory_rank is not None:
            assert q.deep_rank == q.memory_rank  # the deep search agrees where both look
    pooled = result.pooled()
    assert pooled.questions == 7
    for rates in (pooled.recall, pooled.message_recall):
        values = [rates[k] or 0.0 for k in (1, 3, 10)]
        assert values == sorted(values) and values[0] > 0
    assert pooled.recall[10] == 1.0  # two small conversations: every window is among 10 hits
    per_conv = [result.scores(c) for c in result.conversations]
    assert sum(s.questions for s in per_conv) == pooled.questions
    assert sum(s.questions for s in result.by_category().values()) == pooled.questions
    assert list(result.by_category()) == ["1", "2", "4"]
    one, two = result.conversations
    assert (one.messages, one.sessions, two.messages) == (9, 3, 4)
    assert one.memories and two.memories and one.ingest_s is not None
    assert one.unknown_evidence == ("D9:9", "D") and (one.unanswerable, one.other_categories) == (
        1,
        1,
    )
    assert result.store_bytes and result.bytes_per_message == result.store_bytes / 13
    latency = result.latency()
    assert latency.search_p50 is not None and latency.context_p95 is not None


def test_the_result_reads_back_equal_from_its_json(result: EvalResult) -> None:
    text = to_json(result)
    data = json.loads(text)
    assert EvalResult.from_dict(data) == result
    assert data["pooled"]["questions"] == 7 and data["pooled"]["recall@1"] is not None
    first = data["conversations"][0]
    assert first["per_question"][0]["held"] == {str(b): True for b in BUDGETS}
    assert first["by_category"]["4"]["questions"] == 2
    assert "deep_rank" not in first["per_question"][0]


def test_the_report_has_a_row_per_conversation_and_a_pooled_row(result: EvalResult) -> None:
    text = report(result)
    rows = [line for line in text.splitlines() if line.startswith("| conv-") or "**all**" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| conv-a", "| conv-b", "| **all**"]
    assert "| 1 | 3 |" in text  # the category table: category 1 asked 3 times
    assert "evidence ids naming no message: 2 (D9:9, D)" in text
    assert "questions skipped, no known evidence: 1" in text
    assert "questions of other categories, not asked: 1" in text


def test_a_kept_store_is_measured_again_without_reading(
    data: EvalSet, kept: Path, result: EvalResult
) -> None:
    assert (kept / STORE_FILE).exists()
    with pytest.raises(InputError, match="exists: keep each run's store in a folder of its own"):
        evaluate(data, store_dir=kept)
    with Memory(store=f"sqlite:///{kept / STORE_FILE}") as memory:
        again = evaluate(data, memory=memory, ingest=False, budgets=BUDGETS)
    assert [q.memory_rank for q in again.questions] == [q.memory_rank for q in result.questions]
    assert [q.held for q in again.questions] == [q.held for q in result.questions]
    assert again.conversations[0].memories is None and again.store_bytes is None


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"budgets": ()}, "budgets must be whole numbers > 0"),
        ({"recall_at": (0, 3)}, "recall_at must be whole numbers > 0"),
        ({"mode": "fuzzy"}, "mode must be one of hybrid, vector, text"),
        ({"message_k": 5}, r"message_k \(5\) must be at least max\(recall_at\)"),
        ({"memory": object(), "config": {}}, "give memory= or config/store_dir, not both"),
    ],
)
def test_bad_settings_are_refused_before_any_work(
    data: EvalSet, settings: dict[str, Any], expected: str
) -> None:
    with pytest.raises(InputError, match=expected):
        evaluate(data, **settings)


def test_a_set_with_no_question_left_is_refused() -> None:
    samples = locomo_samples()[:1]
    samples[0]["qa"] = [q for q in samples[0]["qa"] if q["category"] in (3, 5)]
    data = parse_eval_data(samples, "few.json")
    with pytest.raises(InputError, match=r"few\.json: no question to ask \(1 without known"):
        evaluate(data)


# -- the checks behind the metrics, on hand-made hits --------------------------------------------


def _hit(sources: list[tuple[str | None, str]], *passages: tuple[int | None, float]) -> Any:
    made = [SimpleNamespace(message_id=i, content=c) for i, c in sources]
    memory = SimpleNamespace(item=SimpleNamespace(metadata=SimpleNamespace(sources=made)))
    hits = tuple(PassageHit(0, 1, score, index) for index, score in passages)
    return SimpleNamespace(memory=memory, passages=hits)


def test_a_hit_cites_evidence_by_id_or_by_its_whole_text() -> None:
    evidence, texts = {"c/0/3"}, ["I adopted a dog."]
    assert cites(_hit([("c/0/3", "other")]), evidence, texts)
    assert cites(_hit([(None, "Well.  I  adopted a dog.  ")]), evidence, texts)  # whitespace
    assert not cites(_hit([("c/0/4", "I adopted")]), evidence, texts)  # a part is not it


def test_messages_rank_by_their_best_passage_across_hits() -> None:
    first = _hit([("a", "A"), ("b", "B")], (1, 0.9), (0, 0.4), (1, 0.5))
    second = _hit([("c", "C"), ("a", "A"), (None, "no id")], (0, 0.9), (1, 0.95), (2, 0.1))
    whole = _hit([("d", "D")])  # scored whole: it names no message
    ranked = [key for key, _ in ranked_messages([first, second, whole])]
    assert ranked == ["a", "b", "c", ("text", "no id")]  # b and c tie at 0.9: b came first
    assert ranked_messages([_hit([("a", "A")], (None, 0.9), (7, 0.8))]) == []


def test_a_block_holds_evidence_whatever_its_tags_and_escapes() -> None:
    block = "<memories>\n<m>Ana: I like R&amp;B &lt;3\n  and jazz.</m>\n</memories>"
    assert holds(block, ["I like R&B <3 and jazz."])
    assert not holds(block, ["I like R&B <3 and jazz. A lot."])
    assert not holds(block, [""])  # an empty text is never found
