"""Batch jobs under faults and changes: an output that cannot be written (once, or on every
write), inputs that failed and are read again, a changed job that is noticed, an output folder
inside the input folder, hidden files counted, and a local worker process that is killed."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memreader import ConfigError, InputError, WindowConfig
from memreader.batch.job import JobConfig, load_job
from memreader.batch.job_run import run_job
from memreader.batch.sinks import jsonl as jsonl_sink
from memreader.batch.sinks import output_stem
from memreader.pipeline import Step
from tests.batch.jobs import HASH_READER, ROOT, chat_lines, output_items, write_job

pytestmark = pytest.mark.timeout(300)


def _manifest(out: Path) -> dict[str, Any]:
    inputs: dict[str, Any] = json.loads((out / "_manifest.json").read_text())["inputs"]
    return inputs


def _errors(out: Path) -> list[dict[str, Any]]:
    lines = (out / "_errors.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _item_files(out: Path, key: str) -> list[str]:
    """The files of the input ``key`` in ``out``, and every temporary file left there."""
    stem = output_stem(key)
    return sorted(p.name for p in out.iterdir() if p.name.startswith((stem, ".")))


def _uninterrupted(tmp_path: Path, job: dict[str, Any], name: str = "fresh") -> list[str]:
    """The items of ``job`` run once, with a copy of ``in``, in a folder of its own."""
    fresh = tmp_path / name
    fresh.mkdir()
    shutil.copytree(tmp_path / "in", fresh / "in")
    run_job(load_job(write_job(fresh, dict(job))))
    return output_items(fresh / "out")


def _unique_ids(items: list[str]) -> bool:
    ids = [json.loads(line)["id"] for line in items]
    return len(ids) == len(set(ids))


# --- 2. a failed write -------------------------------------------------------------------------


class _FailOnce:
    """An item file whose ``fail_at``-th write (counted over every item file) fails with ENOSPC,
    as a full disk would; every other call goes to the real file."""

    def __init__(self, real: Any, plan: dict[str, int]) -> None:
        self._real = real
        self._plan = plan

    def write(self, data: bytes) -> int:
        self._plan["writes"] += 1
        if self._plan["writes"] == self._plan["fail_at"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written: int = self._real.write(data)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> _FailOnce:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._real.close()


def test_a_write_that_fails_once_fails_its_input_and_a_rerun_completes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(6, "a"))
    (tmp_path / "in" / "b.jsonl").write_text(chat_lines(3, "b"))
    spec = {"inputs": [{"path": "in"}], "output": {"path": "out"}, "scenes_per_call": 4}
    job = load_job(write_job(tmp_path, dict(spec)))
    plan = {"writes": 0, "fail_at": 3}  # the third item of a's first batch of four
    item_temp = re.compile(r"^\.[^_].*\.jsonl\.[0-9a-f]{12}\.tmp$")

    def failing_open(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        real = open(path, mode, *args, **kwargs)  # noqa: SIM115 - closed through the proxy
        return _FailOnce(real, plan) if item_temp.match(os.path.basename(path)) else real

    monkeypatch.setattr(jsonl_sink, "open", failing_open, raising=False)
    first = run_job(job)
    monkeypatch.undo()
    out = tmp_path / "out"
    assert (first.read, first.failed_inputs, first.exit_code) == (2, 1, 1)
    (error,) = _errors(out)  # one line for the input, none per scene
    assert (error["input"], error["scene"], error["reason"]) == ("in/a.jsonl", None, "SinkError")
    assert output_stem("in/a.jsonl") in error["message"], "it names the output"
    assert "No space left on device" in error["message"]
    assert _item_files(out, "in/a.jsonl") == [], "nothing of a is published, no temp file left"
    assert _manifest(out)["in/a.jsonl"]["status"] == "failed"
    assert first.counts["items"] == 3, "only b's items: a's were not published"
    # The rerun reads a again (and only a) and ends with the uninterrupted run's items.
    second = run_job(job)
    assert (second.read, second.skipped, second.exit_code) == (1, 1, 0) and second.retried == 1
    items = output_items(out)
    assert items == _uninterrupted(tmp_path, spec) and _unique_ids(items) and len(items) == 9


_LIMITED_CLI = """
import resource, runpy, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["memreader", *sys.argv[2:]]
runpy.run_module("memreader.cli", run_name="__main__")
"""


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_an_output_that_always_fails_to_write_fails_each_input_once(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.jsonl").write_text(chat_lines(40, "big"))
    (tmp_path / "in" / "small.jsonl").write_text(chat_lines(1, "small"))
    spec = {"inputs": [{"path": "in"}], "output": {"path": "out"}}
    fresh = _uninterrupted(tmp_path, spec)
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "fresh" / "out").iterdir()}
    small = sizes[f"{output_stem('in/small.jsonl')}.jsonl"]
    big = sizes[f"{output_stem('in/big.jsonl')}.jsonl"]
    # Every file past `limit` bytes fails (EFBIG, "File too large"): big's output always does;
    # small's output, the manifest, the errors file and the summary fit.
    limit = max(small, 8192) * 2
    assert big > 2 * limit, "the test needs big's output well over the limit"
    job = write_job(tmp_path, dict(spec))
    limited = subprocess.run(
        [sys.executable, "-c", _LIMITED_CLI, str(limit), "ingest", str(job), "--quiet"],
        cwd=tmp_path,
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert limited.returncode == 1, limited.stderr
    out = tmp_path / "out"
    (error,) = _errors(out)  # not one per scene (40), nor one per batch
    assert (error["input"], error["scene"], error["reason"]) == ("in/big.jsonl", None, "SinkError")
    assert output_stem("in/big.jsonl") in error["message"] and "File too large" in error["message"]
    assert _item_files(out, "in/big.jsonl") == [], "nothing half-written is published"
    manifest = _manifest(out)
    assert (manifest["in/big.jsonl"]["status"], manifest["in/small.jsonl"]["status"]) == (
        "failed",
        "done",
    )
    summary = json.loads((out / "_summary.json").read_text())
    assert summary["failed_inputs"] == 1 and summary["counts"]["items"] == 1
    # Without the limit, the rerun reads big only, and the output is the uninterrupted one.
    again = run_job(load_job(job))
    assert (again.read, again.skipped, again.exit_code) == (1, 1, 0) and again.retried == 1
    items = output_items(out)
    assert items == fresh and _unique_ids(items) and len(items) == 41


# --- 5. failed inputs are read again -----------------------------------------------------------


def test_failed_inputs_are_read_again_on_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(1, "a"))
    (tmp_path / "in" / "b.jsonl").write_text(chat_lines(8, "b"))
    limit = (tmp_path / "in" / "a.jsonl").stat().st_size + 10  # b is over it: b fails
    spec: dict[str, Any] = {
        "inputs": [{"path": "in", "max_bytes": limit}],
        "output": {"path": "out"},
    }
    job = load_job(write_job(tmp_path, dict(spec)))
    first = run_job(job)
    assert (first.read, first.failed_inputs) == (2, 1)
    second = run_job(job)  # same job, same content: the failed input is read again, a is not
    assert (second.read, second.skipped, second.failed_inputs) == (1, 1, 1)
    assert second.retried == 1
    spec["inputs"][0]["max_bytes"] = 10**6  # not part of what shapes items
    third = run_job(load_job(write_job(tmp_path, dict(spec))))
    assert (third.read, third.skipped, third.exit_code) == (1, 1, 0) and third.retried == 1
    assert output_items(tmp_path / "out") == _uninterrupted(tmp_path, spec)
    assert _errors(tmp_path / "out") == []


# --- 6. a changed job --------------------------------------------------------------------------


def _long_chats(n: int, tag: str) -> str:
    words = " ".join(f"{tag}word{k}" for k in range(120))
    lines = [json.dumps([{"role": "user", "content": f"{tag} {i}: {words}"}]) for i in range(n)]
    return "\n".join(lines) + "\n"


def _reader(max_tokens: int | None, api_key: str = "sk-first-1111") -> dict[str, Any]:
    config: dict[str, Any] = {
        "embedder": {"backend": "hash"},
        # Not used in fast mode; its key is a secret, which never changes a fingerprint.
        "llm": {
            "backend": "openai",
            "model": "m",
            "base_url": "http://127.0.0.1:9",
            "api_key": api_key,
        },
    }
    if max_tokens is not None:
        config["window"] = {"max_tokens": max_tokens, "overlap_tokens": 16}
    return {"backend": "simple_struct", "config": config}


def test_a_changed_job_reads_its_inputs_again(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "in" / f"{name}.jsonl").write_text(_long_chats(2, name))
    spec: dict[str, Any] = {
        "reader": _reader(256),
        "inputs": [{"path": "in"}],
        "output": {"path": "out"},
    }
    out = tmp_path / "out"
    assert run_job(load_job(write_job(tmp_path, dict(spec)))).read == 3
    before = output_items(out)
    # What does not shape the items changes nothing: a rotated key, batching, workers.
    same = {
        **spec,
        "reader": _reader(256, api_key="sk-second-2222"),
        "scenes_per_call": 1,
        "engine": {"workers": 2},
    }
    assert run_job(load_job(write_job(tmp_path, same))).skipped == 3
    # A smaller window does: every input is read again, and the output is the new job's.
    spec["reader"] = _reader(64)
    changed = run_job(load_job(write_job(tmp_path, dict(spec))))
    assert (changed.read, changed.skipped) == (3, 0) and changed.changed == 3
    items = output_items(out)
    assert items != before and len(items) > len(before)
    assert items == _uninterrupted(tmp_path, spec) and _unique_ids(items)
    # A manifest of the first version (no fingerprints): each input is read once more.
    path = out / "_manifest.json"
    data = json.loads(path.read_text())
    data["version"] = 1
    for entry in data["inputs"].values():
        del entry["fingerprint"]
    path.write_text(json.dumps(data))
    assert run_job(load_job(write_job(tmp_path, dict(spec)))).changed == 3
    assert run_job(load_job(write_job(tmp_path, dict(spec)))).skipped == 3


def test_a_changed_output_format_leaves_no_items_of_the_old_one(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(2, "a"))
    spec: dict[str, Any] = {"inputs": [{"path": "in"}], "output": {"path": "out"}}
    run_job(load_job(write_job(tmp_path, dict(spec))))
    spec["output"] = {"path": "out", "format": "parquet"}
    summary = run_job(load_job(write_job(tmp_path, dict(spec))))
    assert summary.read == 1 and summary.changed == 1
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    stem = output_stem("in/a.jsonl")
    assert [n for n in names if n.startswith(stem)] == [f"{stem}.parquet"]


def input_fingerprints(job: JobConfig, *, refine: bool = False) -> list[str]:
    from memreader.batch.fingerprint import input_fingerprints
    from memreader.batch.plan import plan_job

    return input_fingerprints(job, plan_job(job).reader, refine=refine)


def _with_llm(reader: dict[str, Any], **llm: Any) -> dict[str, Any]:
    config = reader["config"]
    return {**reader, "config": {**config, "llm": {**config["llm"], **llm}}}


def _with_config(reader: dict[str, Any], **config: Any) -> dict[str, Any]:
    return {**reader, "config": {**reader["config"], **config}}


def _base_job(**changes: Any) -> JobConfig:
    data: dict[str, Any] = {
        "reader": _reader(256),
        "inputs": [{"path": "a"}, {"path": "b", "format": "jsonl"}],
        "output": {"path": "out"},
        **changes,
    }
    return JobConfig.model_validate(data)


@pytest.mark.parametrize(
    "changes",
    [
        {"mode": "fine"},
        {"type": "doc", "inputs": [{"path": "a"}, {"path": "b"}]},
        {"reader": _reader(64)},
        {"reader": {**HASH_READER}},
        {"reader": _with_llm(_reader(256), model="another")},
        {"reader": _with_llm(_reader(256), temperature=0.7)},
        {"created_at": "2026-02-01T00:00:00Z"},
        {"tags": ["x"]},
        {"output": {"path": "out", "format": "parquet"}},
        {"inputs": [{"path": "a", "mapping": {"messages": "turns"}}, {"path": "b"}]},
        {"inputs": [{"path": "a", "user_id": {"from": "constant", "value": "u"}}, {"path": "b"}]},
        {"inputs": [{"path": "a", "format": "json"}, {"path": "b"}]},
    ],
)
def test_what_shapes_items_changes_the_fingerprint(changes: dict[str, Any]) -> None:
    base = input_fingerprints(_base_job())
    assert input_fingerprints(_base_job(**changes))[0] != base[0]


@pytest.mark.parametrize(
    "changes",
    [
        {"reader": _reader(256, api_key="sk-other-3333")},
        {"reader": _with_llm(_reader(256), timeout=5, max_retries=0)},
        {"reader": _with_config(_reader(256), llm_max_concurrency=32)},
        {"scenes_per_call": 3},
        {"engine": {"kind": "ray", "workers": 4}},
        {"output": {"path": "elsewhere", "shard_bytes": 1000}},
        {"inputs": [{"path": "z", "max_bytes": 5}, {"path": "b", "format": "jsonl"}]},
    ],
)
def test_what_does_not_shape_items_keeps_the_fingerprint(changes: dict[str, Any]) -> None:
    assert input_fingerprints(_base_job(**changes)) == input_fingerprints(_base_job())


def test_a_default_spelled_out_keeps_the_fingerprint() -> None:
    default = WindowConfig()
    spelled = _reader(None)
    spelled["config"]["window"] = {"max_tokens": default.max_tokens}
    assert input_fingerprints(_base_job(reader=spelled)) == input_fingerprints(
        _base_job(reader=_reader(None))
    )


def test_the_version_and_the_command_change_the_fingerprint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = input_fingerprints(_base_job())
    assert input_fingerprints(_base_job(), refine=True) != base
    monkeypatch.setattr("memreader.batch.fingerprint.__version__", "999.0")
    assert input_fingerprints(_base_job()) != base


# --- 7, 8. the output inside the input folder; hidden files ------------------------------------


def test_an_output_inside_the_input_folder_is_never_read_back(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for name in ("a", "b"):
        (tmp_path / "data" / f"{name}.jsonl").write_text(chat_lines(2, name))
    job = load_job(
        write_job(tmp_path, {"inputs": [{"path": "data"}], "output": {"path": "data/out"}})
    )
    first = run_job(job)
    assert (first.inputs, first.read) == (2, 2)
    for _ in range(2):  # the inputs found do not grow with the outputs
        again = run_job(job)
        assert (again.inputs, again.read, again.skipped, again.exit_code) == (2, 0, 2, 0)
    assert len(output_items(tmp_path / "data" / "out")) == 4
    # A glob over the same folder, too.
    glob_job = load_job(
        write_job(
            tmp_path, {"inputs": [{"path": "data/**/*.jsonl"}], "output": {"path": "data/out"}}
        )
    )
    assert run_job(glob_job).inputs == 2
    # An input that is the output folder itself: a clear error, before anything is read.
    same = load_job(
        write_job(tmp_path, {"inputs": [{"path": "data/out"}], "output": {"path": "data/out"}})
    )
    with pytest.raises(InputError, match=r"inputs\.0: 'data/out' holds only the job's own output"):
        run_job(same)


def test_hidden_files_passed_over_are_counted_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "in" / ".git").mkdir(parents=True)
    (tmp_path / "in" / ".git" / "config").write_text("x")
    (tmp_path / "in" / ".notes.jsonl").write_text(chat_lines(1, "hidden"))
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(1, "a"))
    job = load_job(write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "out"}}))
    summary = run_job(job)
    assert json.loads((tmp_path / "out" / "_summary.json").read_text()).get("hidden") == 2
    assert (summary.inputs, summary.hidden) == (1, 2)
    assert "2 hidden files passed over" in summary.lines()[0]


# --- 9. a dead local worker --------------------------------------------------------------------


class KillOn(Step):
    """Kills its own worker process (SIGKILL, as the OOM killer would) when an item holds
    ``KILL-ME``; never the test's own process."""

    name = "kill_on"
    requires = ("emitted",)
    produces = ("emitted",)

    def run(self, state: Any, runtime: Any) -> None:
        if multiprocessing.parent_process() is None:
            return
        if any("KILL-ME" in item.memory for scene in state.items for item in scene):
            os.kill(os.getpid(), signal.SIGKILL)


KILLING_READER = {
    "backend": "simple_struct",
    "config": {
        "embedder": {"backend": "hash"},
        "pipeline": {
            "allow_imports": True,
            "insert_before": {"embed": [{"step": "tests.batch.test_batch_faults:KillOn"}]},
        },
    },
}


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_a_killed_local_worker_costs_only_its_input_and_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for k in range(6):
        (tmp_path / "in" / f"c{k}.jsonl").write_text(chat_lines(2, f"c{k}"))
    # Two inputs that kill their worker: the run needs a replacement for each.
    for name in ("boom1", "boom2"):
        (tmp_path / "in" / f"{name}.jsonl").write_text(chat_lines(1, "KILL-ME"))
    spec = {
        "reader": KILLING_READER,
        "inputs": [{"path": "in"}],
        "output": {"path": "out"},
        "engine": {"kind": "local", "workers": 2},
    }
    job = load_job(write_job(tmp_path, dict(spec)))
    summary = run_job(job)
    assert (summary.inputs, summary.read, summary.failed_inputs) == (8, 8, 2)
    out = tmp_path / "out"
    manifest = _manifest(out)
    for key in ("in/boom1.jsonl", "in/boom2.jsonl"):
        assert manifest[key]["status"] == "failed"
        assert (
            manifest[key]["error"].startswith("WorkerDied: ")
            and "SIGKILL" in manifest[key]["error"]
        )
    assert sorted(e["input"] for e in _errors(out)) == ["in/boom1.jsonl", "in/boom2.jsonl"]
    # The other inputs are whole: the same items as a one-worker run without the killers.
    clean = tmp_path / "clean"
    (clean / "in").mkdir(parents=True)
    for k in range(6):
        shutil.copy(tmp_path / "in" / f"c{k}.jsonl", clean / "in")
    run_job(load_job(write_job(clean, {**spec, "engine": {"workers": 1}})))
    assert output_items(out) == output_items(clean / "out")
    # The next run reads the two failed inputs again (and they fail again, alone).
    again = run_job(job)
    assert (again.read, again.skipped, again.failed_inputs) == (2, 6, 2) and again.retried == 2


def test_a_local_worker_that_cannot_be_built_stops_the_job_with_its_own_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "in").mkdir()
    for k in range(3):
        (tmp_path / "in" / f"c{k}.jsonl").write_text(chat_lines(1, f"c{k}"))
    pipeline = {"allow_imports": True, "insert_before": {"embed": [{"step": f"{__name__}:Nope"}]}}
    config = {"embedder": {"backend": "hash"}, "pipeline": pipeline}
    reader = {"backend": "simple_struct", "config": config}
    spec = {
        "reader": reader,
        "inputs": [{"path": "in"}],
        "output": {"path": "out"},
        "engine": {"workers": 2},
    }
    with pytest.raises(ConfigError, match="has no 'Nope'"):
        run_job(load_job(write_job(tmp_path, spec)))


class _Unpicklable(Exception):
    """An error whose constructor takes two arguments: pickle cannot rebuild it."""

    def __init__(self, what: str, where: int) -> None:
        super().__init__(f"{what} at {where}")


def test_a_worker_error_that_does_not_pickle_reaches_the_driver_in_words() -> None:
    from multiprocessing import Pipe

    from memreader.batch.engines.local import _send_error
    from memreader.errors import MemReaderError

    here, there = Pipe()
    _send_error(there, _Unpicklable("no reader", 3))
    kind, error = here.recv()
    assert kind == "error" and isinstance(error, MemReaderError)
    assert str(error).startswith("_Unpicklable: no reader at 3 (not picklable: TypeError(")
    _send_error(there, ValueError("plain"))
    assert isinstance(here.recv()[1], ValueError)  # one that pickles comes back as it is
