"""memreader.batch.plan: a job's settings are split once, at the top of a run, and flow down.
The reader config is read and validated once per run, the output store is resolved once (for
the sink and the reader's ``dedup`` alike), the workers' spec travels whole to other processes,
and no component below the plan is handed the whole job."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader.batch.job import JobConfig, load_job
from memreader.batch.job_run import run_job
from memreader.batch.plan import plan_job

BATCH = Path(__file__).resolve().parents[2] / "memreader" / "batch"
#: The modules that may hold a whole job: its model, the plan that splits it, the run that
#: starts from it, the fingerprint that digests it, and the command that loads it.
HOLDERS = {"job.py", "plan.py", "job_run.py", "fingerprint.py", "cli.py"}
HASH_READER = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}
SCENE = [{"role": "user", "content": "I like tea."}, {"role": "assistant", "content": "Noted."}]


def _job(tmp_path: Path, **changes: Any) -> JobConfig:
    """A job over two small chat inputs, read with the hash embedder."""
    (tmp_path / "in").mkdir(exist_ok=True)
    for name in ("a", "b"):
        (tmp_path / "in" / f"{name}.jsonl").write_text(json.dumps(SCENE) + "\n", encoding="utf-8")
    job = {"reader": HASH_READER, "inputs": [{"path": "in"}], "output": {"path": "out"}, **changes}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job), encoding="utf-8")
    return load_job(tmp_path / "job.yaml")


def test_a_run_reads_the_reader_config_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "reader.yaml").write_text(yaml.safe_dump(HASH_READER), encoding="utf-8")
    job = _job(tmp_path, reader="reader.yaml")
    calls = 0
    real = JobConfig.reader_config

    def counted(self: JobConfig) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return real(self)

    monkeypatch.setattr(JobConfig, "reader_config", counted)
    summary = run_job(job)
    assert summary.read == 2 and summary.exit_code == 0
    assert calls == 1  # the fingerprint and the worker get what the plan read


def test_the_output_store_is_resolved_once_for_the_sink_and_the_reader(tmp_path: Path) -> None:
    plan = plan_job(_job(tmp_path, output={"store": "sqlite:///m.db"}))
    assert plan.output.store is not None and plan.worker.reader.config.store is not None
    url = plan.output.store.get_secret_value()
    assert url == f"sqlite:///{tmp_path / 'm.db'}"
    assert plan.worker.reader.config.store.get_secret_value() == url
    assert plan.worker.output is plan.output
    assert plan.reader.config.store is None  # the fingerprint's copy, as the job gives it


def test_the_workers_spec_travels_whole(tmp_path: Path) -> None:
    plan = plan_job(_job(tmp_path, output={"store": "sqlite:///m.db"}, tags=["t"]), refine=True)
    sent = pickle.loads(pickle.dumps(plan.worker))
    assert sent == plan.worker
    assert sent.calls.refine and sent.calls.tags == ("t",)
    assert sent.inputs.specs == plan.inputs.specs


def test_no_component_below_the_plan_is_handed_the_whole_job() -> None:
    holders = {
        str(path.relative_to(BATCH))
        for path in BATCH.rglob("*.py")
        if re.search(r"\bJobConfig\b", path.read_text(encoding="utf-8"))
    }
    assert holders == HOLDERS
