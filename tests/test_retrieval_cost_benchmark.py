"""``benchmarks/retrieval_cost.py`` (issue 40): it reads a LoCoMo-shaped file through the public
API and reports what ingestion and asking cost (no timing is asserted, only that the figures
are there and counted from the file)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.evaluation.eval_files import locomo_samples

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
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
    row = _load().main(["here", str(path), "--conversations", ids, "--questions", "2"])
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
        _load().main(["here", str(path), "--conversations", "conv-zz"])
