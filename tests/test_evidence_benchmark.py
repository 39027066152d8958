"""``benchmarks/evidence_retrieval.py`` (issue 30): its labels are right and its scorer runs.

The benchmark's numbers are only as good as its labels, so every set is checked: each
question's evidence messages exist, the last one states the planted fact, and a synthetic
question does not simply copy the value it asks for. The scorer then runs end to end on the
tiny sets with the ``hash`` embedder (no timing is asserted).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.evaluation.eval_files import locomo_samples

ROOT = Path(__file__).resolve().parents[1]
# The benchmark's main() sets up logging for its run (a filter on the embed step's logger that
# lets each message through once per process): undone after each test, for the tests after it.
pytestmark = pytest.mark.usefixtures("kept_logging")


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


def test_the_baseline_packs_whole_lines_within_its_budget() -> None:
    from memreader.windowing.tokens import get_tokenizer

    baselines = sys.modules["evidence_baselines"]  # loaded with the benchmark, from its folder
    tokenizer = get_tokenizer()
    lines = [
        "Wen: 我们刚在成都签了房子的租约，下个月就搬过去。" * 3,
        "Ana: I moved to Porto. " * 40,
    ]
    lines += ["Bo: ok", "Ana: see you"]
    counts = [tokenizer.count(text) for text in lines]
    for budget in (3, 10, 57, 200, 2000):
        block = baselines.pack(lines, counts, budget, tokenizer)
        assert tokenizer.count(block) <= budget
        assert all(part in lines for part in block.split("\n") if block)  # each line whole
    assert baselines.pack(lines, counts, 100, tokenizer).startswith("Wen: 我们刚在成都")
    assert baselines.pack(lines, counts, 10, tokenizer) == "Bo: ok\nAna: see you"  # skipped


def test_the_baseline_fuses_bm25_and_vectors_by_rank() -> None:
    baselines = sys.modules["evidence_baselines"]
    words = [baselines.tokens(t) for t in ("Ana: I moved to Porto", "Bo: chess", "Ana: hi")]
    scores = baselines.BM25(words).scores(baselines.tokens("Porto?"))
    assert scores[0] > 0 and scores[1] == scores[2] == 0
    assert baselines.fuse([[0], [1, 0, 2]]) == [0, 1, 2]  # in both lists beats first in one


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
        ("synthetic-en", "baseline: BM25 + hash lines, RRF"),
        ("synthetic-ja", "baseline: BM25 + hash lines, RRF"),
    ]
    for row in rows:
        ranked = ["recall", "msg"] if row["packer"] == "Memory.context" else ["msg"]
        for prefix in ranked:
            rates = [row[f"{prefix}@{k}"] for k in (1, 3, 10)]
            assert all(0.0 <= r <= 1.0 for r in rates) and rates == sorted(rates)
        assert all(0.0 <= row[f"ctx@{b}"] <= 1.0 for b in bench.BUDGETS)
        assert row["questions"] == sum(v["questions"] for v in row["by_kind"].values())
        assert row["packer"].startswith(("baseline", "Memory.context"))
    assert "recall@1" not in rows[4]  # the baseline has no memories: message level only
    assert rows[2]["memories"] > rows[0]["memories"]  # smaller windows, more memories
    assert "| synthetic-en | window 128/32" in capsys.readouterr().out


def test_a_user_file_runs_through_the_same_code(tmp_path: Path) -> None:
    from tests.evaluation.eval_files import locomo_samples, write

    path = write(tmp_path, "locomo.json", locomo_samples())
    rows = bench.main(["--eval-file", str(path), "--embedder", "hash", "--no-names"])
    assert [(r["set"], r["packer"]) for r in rows] == [
        ("locomo.json", "Memory.context"),
        ("locomo.json", "baseline: whole lines"),
    ]
    assert all(r["questions"] == 7 and r["owners"] == 2 for r in rows)
    assert rows[1]["per_question"][0]["message_rank"] is not None


def test_a_set_converts_to_what_the_library_measures() -> None:
    data = bench.make_set("synthetic-en", tiny=True)
    converted = bench.eval_set(data)
    assert converted.name == "synthetic-en" and converted.questions == len(data.questions)
    conv = converted.conversations[0]
    first = data.conversations[0].sessions[0][0]
    assert conv.message(first["message_id"]).as_message() == first
    assert [q.category for q in conv.questions] == [q.kind for q in data.questions]
    from types import SimpleNamespace

    source = SimpleNamespace(message_id="x", content="I adopted a dog.")
    hit = SimpleNamespace(
        memory=SimpleNamespace(item=SimpleNamespace(metadata=SimpleNamespace(sources=[source])))
    )
    assert bench.cites(hit, {"y"}, ["I adopted a dog."])  # the library's check


def test_kept_stores_are_reused_and_misses_say_where_the_evidence_ranked(tmp_path: Path) -> None:
    argv = ["--tiny", "--embedder", "hash", "--sets", "synthetic-en", "--stores", str(tmp_path)]
    argv.append("--no-baseline")
    first, again = bench.main(argv), bench.main(argv)
    assert len(list(tmp_path.glob("synthetic-en-seed0-*.db"))) == 1
    assert first[0]["memories"] > 0 and again[0]["memories"] == "reused"
    keys = ("recall@1", "recall@3", "recall@10", "msg@3", "ctx@500")
    assert [first[0][k] for k in keys] == [again[0][k] for k in keys]
    for row in first[0]["per_question"]:
        assert set(row["held"]) == {str(b) for b in bench.BUDGETS}
        if row["memory_rank"] != 1:  # where its evidence ranked among 200 hits, if at all
            assert "deep_rank" in row
            assert row["deep_rank"] is None or row["deep_rank"] > 1


# benchmarks/retrieval_cost.py (issue 40): it reads a LoCoMo-shaped file through the public API
# and reports what ingestion and asking cost (no timing is asserted, only that the figures are
# there and counted from the file).


def _load_cost() -> ModuleType:
    path = ROOT / "benchmarks" / "retrieval_cost.py"
    spec = importlib.util.spec_from_file_location("memreader_benchmarks_retrieval_cost", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_cost_of_a_locomo_file_is_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = locomo_samples()
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    ids = ",".join(s["sample_id"] for s in samples)
    row = _load_cost().main(["here", str(path), "--conversations", ids, "--questions", "2"])
    turns = sum(
        len(v)
        for s in samples
        for k, v in s["conversation"].items()
        if re.fullmatch(r"session_\d+", k)
    )
    assert row["label"] == "here" and row["messages"] == turns
    assert row["questions"] == sum(min(2, len(s["qa"])) for s in samples)
    for key in ("ingest_cpu_ms_per_msg", "search_p95_ms", "context_p95_ms", "store_bytes_per_msg"):
        assert row[key] > 0, key
    assert json.loads(capsys.readouterr().out) == row


def test_a_file_without_the_conversations_named_says_so(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo_samples()), encoding="utf-8")
    with pytest.raises(SystemExit, match="no conversation"):
        _load_cost().main(["here", str(path), "--conversations", "conv-zz"])
