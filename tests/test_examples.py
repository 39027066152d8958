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


@pytest.mark.slow
def test_pipeline_steps_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "pipeline_steps.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "redact" in out and "tag_team" in out
    items = [line for line in out.splitlines() if line.startswith("user:")]
    assert items and all("[email]" in line and "[phone]" in line for line in items)
    assert not any("example.com" in line or "4567" in line for line in items)
    assert "(1, 'dropped', 'min_length: 2 characters of text, fewer than 20')" in out


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_multimodal_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "multimodal.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "chat: 1 item(s), 384-dim vectors" in out
    assert "image_url: ok (PNG 160x90)" in out
    assert "input_audio: unsupported" in out
    assert "doc: chunk 1 of 1, heading 'Lisbon trip'" in out
    assert "/prices.csv -> | green tea | 3.50 |" in out
