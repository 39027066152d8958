"""``benchmarks/heat.py`` (issue 34): it runs end to end on the tiny set with the ``hash``
embedder, and heat changes no ranking when no use is recorded (the benchmark asserts it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The benchmark's main() sets up logging for its run: undone after the test, for the tests after it.
pytestmark = pytest.mark.usefixtures("kept_logging")


def _load() -> ModuleType:
    """``benchmarks/heat.py``, loaded from its file (``benchmarks`` is not a package)."""
    name = "memreader_benchmarks_heat"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "heat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_heat_benchmark_runs_and_no_use_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _load().main(["--tiny", "--embedder", "hash", "--weights", "0,0.5"])
    assert [(r["history"], r["heat_weight"]) for r in rows] == [
        (history, weight)
        for history in ("none", "evidence", "adversarial")
        for weight in (0.0, 0.5)
    ]
    by = {(r["history"], r["heat_weight"]): r for r in rows}
    assert by[("none", 0.5)] == {**by[("none", 0.0)], "heat_weight": 0.5}
    assert by[("evidence", 0.0)]["all"] == by[("none", 0.0)]["all"]  # weight 0 reads no use
    for row in rows:
        assert all(0.0 <= v <= 1.0 for part in ("used", "cold", "all") for v in row[part].values())
    assert "| history | heat_weight |" in capsys.readouterr().out
