"""The examples run as a user would run them (in-process, sharing the loaded local model)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all(" 384 " in line for line in lines)
