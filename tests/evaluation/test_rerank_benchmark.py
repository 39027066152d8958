"""``benchmarks/rerank_mechanics.py`` (issue 44) runs end to end on a tiny LoCoMo-shaped file
with the ``hash`` embedder: one rerank call per search, the order applied, recall's stops
counted (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from tests.evaluation.eval_files import locomo_samples, write

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "memreader_benchmarks_rerank_mechanics", ROOT / "benchmarks" / "rerank_mechanics.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mechanics_are_counted_on_a_tiny_file(tmp_path: Path) -> None:
    bench = _load()
    file = write(tmp_path, "locomo.json", locomo_samples())
    out = tmp_path / "rows.json"
    assert bench.main(["--file", str(file), "--embedder", "hash", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert rows and all(row["llm_calls_per_search"] == 1.0 for row in rows)
    assert all(row["order_applied"] == 1.0 and row["prompt_tokens_mean"] > 0 for row in rows)
    for row in rows:
        assert abs(sum(row["recall_stopped_after"].values()) - 1.0) < 1e-9
