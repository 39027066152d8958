"""What a batch job says on stderr: the windows' notes once per input (not once per call), and
with ``--quiet`` nothing but errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.batch.job import load_job
from memreader.batch.job_run import run_job
from memreader.scenes.memorybank import load_memorybank
from memreader.steps.report import ReadReport
from tests.batch.jobs import cli, write_job
from tests.common import INFO, MEMORYBANK_CN

pytestmark = pytest.mark.timeout(300)

# The hash embedder acting as an English-only model: Chinese windows get a note each.
ENGLISH_ONLY = {
    "backend": "simple_struct",
    "config": {"embedder": {"backend": "hash", "config": {"english_only": True}}},
}
PER_CALL = "mostly text the embedder"


def _chinese_job(tmp_path: Path, **changes: Any) -> Path:
    """Two inputs of 4 Chinese MemoryBank days each, read one day per call."""
    days = next(iter(load_memorybank(MEMORYBANK_CN).values()))
    (tmp_path / "in").mkdir()
    for name, part in (("a.jsonl", days[:4]), ("b.jsonl", days[4:8])):
        lines = "".join(json.dumps(day, ensure_ascii=False) + "\n" for day in part)
        (tmp_path / "in" / name).write_text(lines, encoding="utf-8")
    job = {
        "reader": ENGLISH_ONLY,
        "inputs": [{"path": "in"}],
        "output": {"path": "out"},
        "scenes_per_call": 1,
        **changes,
    }
    return write_job(tmp_path, job)


def test_notes_are_said_once_per_input_not_per_call(tmp_path: Path) -> None:
    result = cli("ingest", str(_chinese_job(tmp_path)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert not [line for line in lines if PER_CALL in line], "no warning per call"
    noted = [line for line in lines if "windows have a note" in line]
    assert [line.split(": ")[1] for line in noted] == ["in/a.jsonl", "in/b.jsonl"]
    for line in noted:
        assert line.startswith("WARNING memreader.batch: in/")
        assert "4 of 4 windows have a note (first: scene 0, window 0: " in line
        assert "cannot read" in line and "hash:16" in line
    assert any(line.startswith("memreader: inputs 2") for line in lines), "the summary"


@pytest.mark.parametrize("workers", [1, 2])
def test_quiet_says_nothing_but_the_exit_status(tmp_path: Path, workers: int) -> None:
    job = _chinese_job(tmp_path, engine={"workers": workers})
    result = cli("ingest", str(job), "--quiet", cwd=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")
    summary = json.loads((tmp_path / "out" / "_summary.json").read_text(encoding="utf-8"))
    assert summary["counts"]["windows"] == 8 and summary["read"] == 2
    # Run again: every input is skipped, still silently.
    result = cli("ingest", str(job), "--quiet", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def test_quiet_still_says_errors(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"inputs": [{"path": "missing/*.jsonl"}], "output": {"path": "o"}})
    result = cli("ingest", str(job), "--quiet", cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()  # the one error, however the command line prefixes it
    assert line.endswith("error: inputs.0: no file matches 'missing/*.jsonl'")


def test_a_read_outside_the_job_still_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        run_job(load_job(_chinese_job(tmp_path)))  # in this process (workers: 1)
    per_input = [r for r in caplog.records if r.name == "memreader.batch"]
    assert len(per_input) == 2 and not [r for r in caplog.records if PER_CALL in r.message]
    caplog.clear()
    reader = SimpleStructMemReader(
        SimpleStructMemReaderConfig.model_validate(ENGLISH_ONLY["config"])
    )
    with caplog.at_level(logging.WARNING):
        days = next(iter(load_memorybank(MEMORYBANK_CN).values()))[:1]
        reader.get_memory(days, type="chat", info=INFO, report=ReadReport())
    assert [r.levelno for r in caplog.records if PER_CALL in r.message] == [logging.WARNING]
