"""``benchmarks/evidence_retrieval.py`` (issue 30): its labels are right and its scorer runs.

The benchmark's numbers are only as good as its labels, so every set is checked: each
question's evidence messages exist, the last one states the planted fact, and a synthetic
question does not simply copy the value it asks for. The scorer then runs end to end on the
tiny sets with the ``hash`` embedder (no timing is asserted).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    """``benchmarks/evidence_retrieval.py``, loaded from its file (``benchmarks`` is not a
    package); it puts its folder on ``sys.path`` for its data modules."""
    name = "memreader_benchmarks_evidence_retrieval"
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "benchmarks" / "evidence_retrieval.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench = _load()


@pytest.mark.parametrize("name", bench.SETS)
def test_every_question_cites_messages_that_state_its_fact(name: str) -> None:
    data = bench.make_set(name)  # the full set: generating and deriving it is quick
    assert data.questions
    ids = [m["message_id"] for c in data.conversations for s in c.sessions for m in s]
    assert len(ids) == len(set(ids))  # an id names one message
    assert all(session for c in data.conversations for session in c.sessions)  # add() takes it
    for q in data.questions:
        assert q.evidence and len(set(q.evidence)) == len(q.evidence)
        messages = [data.message(e) for e in q.evidence]  # KeyError: a label cites nothing
        assert all(e.startswith(q.conv_id + "/") for e in q.evidence)
        last = messages[-1]["content"]
        if data.lang == "en" and name.startswith("memorybank"):
            assert all(q.fact.lower() in m["content"].lower() for m in messages)
        elif name.startswith("memorybank"):
            assert all(q.fact in m["content"] for m in messages)
        else:
            assert q.fact in last


@pytest.mark.parametrize("name", ["synthetic-en", "synthetic-zh", "synthetic-ja"])
def test_synthetic_questions_paraphrase_and_updates_point_at_the_change(name: str) -> None:
    data = bench.make_set(name, quick=True)
    assert bench.make_set(name, quick=True).questions == data.questions  # seeded
    for q in data.questions:
        if q.kind != "date":  # a date question names its event and asks when
            assert q.fact not in q.text
        if q.kind == "date" and q.answer != q.fact:
            assert q.answer[:4].isdigit()  # "yesterday": the session's date minus a day
    conv_sessions = {c.conv_id: c for c in data.conversations}
    updated = [q for q in data.questions if q.kind == "update"]
    for q in updated:
        session = int(q.evidence[-1].split("/")[1])
        assert session > 0  # a change comes after the first statement
        assert conv_sessions[q.conv_id].sessions[session]
    speakers = {m.get("name") for c in data.conversations for s in c.sessions for m in s}
    assert len(speakers) >= 2


def test_memorybank_queries_leave_the_answer_out() -> None:
    for name in ("memorybank-en", "memorybank-cn"):
        data = bench.make_set(name, quick=True)
        for q in data.questions:
            if q.kind != "clause":  # a clause lookup's answer is the clause itself
                assert q.fact.lower() not in q.text.lower()


def test_the_baseline_packer_never_exceeds_its_budget() -> None:
    from memreader.windowing.tokens import get_tokenizer

    class Hit:
        def __init__(self, text: str) -> None:
            item = type("Item", (), {"memory": text})()
            self.memory = type("Stored", (), {"item": item})()

    tokenizer = get_tokenizer()
    hits = [Hit("我们刚在成都签了房子的租约，下个月就搬过去。" * 5), Hit("I moved to Porto. " * 40)]
    for budget in (10, 57, 200, 2000):
        block = bench.baseline_pack(hits, budget)
        assert tokenizer.count(block) <= budget
        assert "\ufffd" not in block
        assert block.startswith("我们刚在成都")


def test_the_scorer_runs_on_tiny_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.json"
    argv = ["--tiny", "--embedder", "hash", "--sets", "synthetic-en,synthetic-ja"]
    rows = bench.main([*argv, "--windows", "default,128/32", "--json", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == rows
    assert [(r["set"], r["variant"]) for r in rows] == [
        ("synthetic-en", "window default, hybrid, k=10"),
        ("synthetic-ja", "window default, hybrid, k=10"),
        ("synthetic-en", "window 128/32, hybrid, k=10"),
        ("synthetic-ja", "window 128/32, hybrid, k=10"),
    ]
    for row in rows:
        rates = [row[f"recall@{k}"] for k in (1, 3, 10)] + [row[f"ctx@{b}"] for b in bench.BUDGETS]
        assert all(0.0 <= r <= 1.0 for r in rates)
        assert rates[0] <= rates[1] <= rates[2]
        assert row["questions"] == sum(v["questions"] for v in row["by_kind"].values())
        assert row["packer"].startswith(("baseline", "Memory.context"))
    assert rows[2]["memories"] > rows[0]["memories"]  # smaller windows, more memories
    assert "| synthetic-en | window 128/32" in capsys.readouterr().out


def test_a_hit_cites_evidence_by_id_or_whole_text_and_by_its_best_passage() -> None:
    from types import SimpleNamespace

    from memreader.retrieval.passages import PassageHit

    def hit(sources: list[tuple[str | None, str]], passages: tuple[PassageHit, ...] = ()) -> Any:
        made = [SimpleNamespace(message_id=i, content=c) for i, c in sources]
        metadata = SimpleNamespace(sources=made)
        memory = SimpleNamespace(item=SimpleNamespace(metadata=metadata))
        return SimpleNamespace(memory=memory, passages=passages)

    evidence, texts = {"c/0/3"}, ["I adopted a dog."]
    assert bench.cites(hit([("c/0/3", "other")]), evidence, texts)
    assert bench.cites(hit([(None, "I  adopted a dog.  ")]), evidence, texts)  # whitespace
    assert not bench.cites(hit([("c/0/4", "I adopted")]), evidence, texts)  # a part is not it
    both = [("c/0/2", "hi"), ("c/0/3", "I adopted a dog.")]
    assert bench.best_passage_cites(hit(both), evidence) is None  # scored whole
    assert bench.best_passage_cites(hit(both, (PassageHit(0, 5, 0.9, 1),)), evidence)
    assert bench.best_passage_cites(hit(both, (PassageHit(0, 5, 0.9, 0),)), evidence) is False


def test_kept_stores_are_reused_and_misses_say_where_the_evidence_ranked(tmp_path: Path) -> None:
    argv = ["--tiny", "--embedder", "hash", "--sets", "synthetic-en", "--stores", str(tmp_path)]
    first, again = bench.main(argv), bench.main(argv)
    assert len(list(tmp_path.glob("synthetic-en-seed0-*.db"))) == 1
    assert first[0]["memories"] > 0 and again[0]["memories"] == "reused"
    keys = ("recall@1", "recall@3", "recall@10", "ctx@500")
    assert [first[0][k] for k in keys] == [again[0][k] for k in keys]
    for row in first[0]["per_question"]:
        assert set(row["held"]) == {str(b) for b in bench.BUDGETS}
        if row["rank"] != 1:  # where its evidence ranked among MISS_DEPTH hits, if at all
            assert "deep_rank" in row
            assert row["deep_rank"] is None or row["deep_rank"] > 1
