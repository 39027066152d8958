"""Batch jobs end to end: job files and their errors, MemoryBank and JSONL inputs, resume after
a SIGKILL, changed inputs, the errors file and exit status, two local workers, Ray, S3 in and
out, refinement jobs, dry runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader import ConfigError
from memreader.batch.job import load_job
from memreader.batch.job_run import dry_run, run_job
from tests.batch.jobs import ROOT, chat_lines, cli, output_items, write_job
from tests.common import MEMORYBANK
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion
from tests.s3_server import moto_s3

__all__ = ["llm_server", "moto_s3"]

pytestmark = pytest.mark.timeout(300)


def test_a_memorybank_job(tmp_path: Path) -> None:
    shutil.copy(MEMORYBANK / "memory_bank_en.json", tmp_path / "bank.json")
    job = load_job(
        write_job(tmp_path, {"inputs": [{"path": "bank.json"}], "output": {"path": "out"}})
    )
    summary = run_job(job)
    assert summary.exit_code == 0 and summary.inputs == 1 and summary.read == 1
    data = json.loads((tmp_path / "bank.json").read_text())
    days = [day for user in data.values() for day in user["history"].values()]
    assert summary.counts["scenes"] == sum(1 for day in days if day), "empty days are no scenes"
    items = [json.loads(line) for line in output_items(tmp_path / "out")]
    assert len(items) == summary.counts["items"] and summary.counts["embeddings"] == len(items)
    assert {i["metadata"]["user_id"] for i in items} == {user.strip() for user in data}
    assert all(i["metadata"]["created_at"].startswith("2026-01-01T00:00:00") for i in items)
    written = json.loads((tmp_path / "out" / "_summary.json").read_text())
    assert written["counts"]["items"] == len(items) and written["exit_code"] == 0
    assert (tmp_path / "out" / "_errors.jsonl").read_text() == ""
    # Run again: the manifest says it is finished; nothing is read, the output is unchanged.
    before = output_items(tmp_path / "out")
    again = run_job(job)
    assert again.read == 0 and again.skipped == 1 and output_items(tmp_path / "out") == before


def test_a_changed_input_is_redone_and_restart_redoes_all(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "in" / f"{name}.jsonl").write_text(chat_lines(3, name))
    job = load_job(write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "out"}}))
    assert run_job(job).read == 3
    (tmp_path / "in" / "b.jsonl").write_text(chat_lines(4, "b"))
    second = run_job(job)
    assert (second.read, second.skipped) == (1, 2)
    assert sum("b: scene 3" in line for line in output_items(tmp_path / "out")) == 1
    assert run_job(job, restart=True).read == 3


def test_bad_records_go_to_the_errors_file_and_the_exit_status(tmp_path: Path) -> None:
    good = chat_lines(2, "ok").splitlines()
    lines = [good[0], "{not json", json.dumps({"role": "user"}), good[1]]
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    job = load_job(
        write_job(tmp_path, {"inputs": [{"path": "chats.jsonl"}], "output": {"path": "out"}})
    )
    summary = run_job(job)
    assert summary.exit_code == 1 and summary.counts["failures"] == 2
    errors = [
        json.loads(line) for line in (tmp_path / "out" / "_errors.jsonl").read_text().splitlines()
    ]
    assert [(e["input"], e["window"]) for e in errors] == [("chats.jsonl", None)] * 2
    assert all(e["reason"] and "line" in e["message"] for e in errors)
    texts = output_items(tmp_path / "out")
    assert sum("ok: scene" in t for t in texts) == 2, "the good scenes are kept"


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"inputs": [], "output": {"path": "o"}}, "inputs: List should have at least 1 item"),
        ({"inputs": [{"path": "x", "format": "xml"}], "output": {"path": "o"}}, "inputs.0.format"),
        ({"inputs": [{"path": "x"}], "output": {"path": "o"}, "engin": {}}, "engin: Extra inputs"),
        (
            {"inputs": [{"path": "x", "user_id": {"from": "field"}}], "output": {"path": "o"}},
            "inputs.0.user_id",
        ),
        ({"inputs": [{"path": "x"}], "output": {"path": "o", "format": "csv"}}, "output.format"),
        (
            {"inputs": [{"path": "${NO_SUCH_VARIABLE_X}"}], "output": {"path": "o"}},
            "NO_SUCH_VARIABLE_X is not set",
        ),
        (
            {"inputs": [{"path": "x"}], "output": {"path": "o"}, "engine": {"workers": 0}},
            "engine.workers",
        ),
    ],
)
def test_malformed_job_files_name_the_key(
    tmp_path: Path, job: dict[str, Any], message: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    with pytest.raises(
        ConfigError, match=message.replace("$", r"\$").replace("{", r"\{").replace("}", r"\}")
    ):
        load_job(path)


def test_two_local_workers_give_the_same_items_as_one(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for k in range(4):
        (tmp_path / "in" / f"c{k}.jsonl").write_text(chat_lines(5, f"c{k}"))
    one = load_job(write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "one"}}))
    run_job(one)
    two_path = write_job(
        tmp_path,
        {
            "inputs": [{"path": "in"}],
            "output": {"path": "two"},
            "engine": {"kind": "local", "workers": 2},
        },
        "two.yaml",
    )
    summary = run_job(load_job(two_path))
    assert summary.read == 4 and summary.exit_code == 0
    assert output_items(tmp_path / "two") == output_items(tmp_path / "one")


@pytest.mark.ray
def test_the_ray_engine_gives_byte_identical_items(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    (tmp_path / "in").mkdir()
    for k in range(3):
        (tmp_path / "in" / f"c{k}.jsonl").write_text(chat_lines(4, f"r{k}"))
    local = load_job(write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "local"}}))
    run_job(local)
    ray_job = write_job(
        tmp_path,
        {
            "inputs": [{"path": "in"}],
            "output": {"path": "ray"},
            "engine": {"kind": "ray", "workers": 2},
        },
        "ray.yaml",
    )
    summary = run_job(load_job(ray_job))
    assert summary.read == 3 and summary.exit_code == 0
    assert output_items(tmp_path / "ray") == output_items(tmp_path / "local")


def test_kill_and_resume_gives_the_uninterrupted_output(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for k in range(12):
        (tmp_path / "in" / f"c{k:02d}.jsonl").write_text(chat_lines(3, f"k{k}"))
    slow_reader = {
        "backend": "simple_struct",
        "config": {
            "embedder": {"backend": "hash"},
            "pipeline": {
                "insert_before": {"embed": [{"step": "tests.batch.jobs:Slow"}]},
                "allow_imports": True,
            },
        },
    }
    job = write_job(
        tmp_path, {"reader": slow_reader, "inputs": [{"path": "in"}], "output": {"path": "out"}}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "memreader.cli", "ingest", str(job), "--quiet"],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )
    manifest = tmp_path / "out" / "_manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if manifest.exists() and len(json.loads(manifest.read_text())["inputs"]) >= 3:
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    done = len(json.loads(manifest.read_text())["inputs"])
    assert 3 <= done < 12, "killed mid-job"
    resumed = cli("ingest", str(job), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((tmp_path / "out" / "_summary.json").read_text())
    assert summary["skipped"] == done and summary["read"] == 12 - done
    # The same job uninterrupted, elsewhere: the same items, no duplicates, no gaps.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copytree(tmp_path / "in", fresh / "in")
    fresh_job = write_job(
        fresh, {"reader": slow_reader, "inputs": [{"path": "in"}], "output": {"path": "out"}}
    )
    assert cli("ingest", str(fresh_job), "--quiet", cwd=fresh).returncode == 0
    items = output_items(tmp_path / "out")
    assert items == output_items(fresh / "out")
    ids = [json.loads(line)["id"] for line in items]
    assert len(ids) == len(set(ids)) == 12 * 3


def test_s3_input_and_output(tmp_path: Path, moto_s3: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="corpus")
    client.create_bucket(Bucket="results")
    client.put_object(Bucket="corpus", Key="chats/a.jsonl", Body=chat_lines(3, "s3a").encode())
    client.put_object(Bucket="corpus", Key="chats/b.jsonl", Body=chat_lines(2, "s3b").encode())
    s3 = {"endpoint_url": moto_s3, "region_name": "us-east-1", "addressing_style": "path"}
    job = load_job(
        write_job(
            tmp_path,
            {
                "inputs": [{"path": "s3://corpus/chats/"}],
                "output": {"path": "s3://results/run1"},
                "s3": s3,
            },
        )
    )
    summary = run_job(job)
    assert summary.read == 2 and summary.exit_code == 0 and summary.counts["items"] == 5
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket="results")["Contents"])
    assert "run1/_manifest.json" in keys and "run1/_summary.json" in keys
    body = b"".join(
        client.get_object(Bucket="results", Key=k)["Body"].read()
        for k in keys
        if k.endswith(".jsonl") and not k.startswith("run1/_")
    )
    assert body.decode().count("\n") == 5
    assert run_job(job).skipped == 2, "the manifest on S3 is read back"


def test_refine_job_points_back_to_the_fast_items(
    tmp_path: Path, llm_server: LLMTestServer
) -> None:
    def respond(request: RecordedRequest) -> Reply:
        fmt = (request.json or {}).get("response_format") or {}
        if fmt.get("json_schema", {}).get("name") == "memory_extraction":
            answer = {
                "memory_list": [
                    {
                        "key": "tea",
                        "memory_type": "UserMemory",
                        "value": "The user likes tea.",
                        "tags": [],
                        "source_ids": [1],
                    }
                ],
                "summary": "tea",
            }
            return Reply(body=openai_completion(json.dumps(answer)))
        return Reply(body=openai_completion(json.dumps({"results": []})))

    llm_server.responder = respond
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(3, "r"))
    run_job(load_job(write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "fast"}})))
    fast = [json.loads(line) for line in output_items(tmp_path / "fast")]
    reader = {
        "backend": "simple_struct",
        "config": {
            "embedder": {"backend": "hash"},
            "llm": {
                "backend": "openai",
                "model": "m",
                "base_url": llm_server.url,
                "api_key": "sk-test-9876",
            },
        },
    }
    refine = write_job(
        tmp_path,
        {
            "reader": reader,
            "inputs": [{"path": "fast", "format": "jsonl"}],
            "output": {"path": "fine"},
        },
        "refine.yaml",
    )
    result = cli("refine", str(refine), "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    fine = [json.loads(line) for line in output_items(tmp_path / "fine")]
    assert len(fine) == len(fast)
    assert sorted(i["metadata"]["refined_from"] for i in fine) == sorted(i["id"] for i in fast)
    assert all(i["memory"] == "The user likes tea." for i in fine)


def test_dry_run_lists_inputs_and_windows_without_work(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(chat_lines(3, "d"))
    job = write_job(tmp_path, {"inputs": [{"path": "in"}], "output": {"path": "out"}})
    rows = dry_run(load_job(job))
    assert rows == [{"input": "in/a.jsonl", "scenes": 3, "windows": 3, "bad_records": 0}]
    result = cli("ingest", str(job), "--dry-run", cwd=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout.splitlines()[0])["windows"] == 3
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_document_job_with_parquet_output(tmp_path: Path) -> None:
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    from tests.docgen import make_csv, make_docx

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.docx").write_bytes(
        make_docx(["Emily drinks oolong.", "She lives in Lisbon."])
    )
    (tmp_path / "docs" / "prices.csv").write_bytes(make_csv([["item", "price"], ["tea", 3]]))
    job = load_job(
        write_job(
            tmp_path,
            {
                "type": "doc",
                "inputs": [{"path": "docs", "format": "document"}],
                "output": {"path": "out", "format": "parquet"},
            },
        )
    )
    summary = run_job(job)
    assert summary.exit_code == 0 and summary.read == 2
    tables = [pyarrow_parquet.read_table(p) for p in sorted((tmp_path / "out").glob("*.parquet"))]
    memories = [m for t in tables for m in t.column("memory").to_pylist()]
    assert any("Emily drinks oolong." in m for m in memories)
    assert any("| tea | 3 |" in m for m in memories)
    metadata = [json.loads(m) for t in tables for m in t.column("metadata").to_pylist()]
    assert {s["doc_path"] for m in metadata for s in m["sources"]} == {"notes.docx", "prices.csv"}
    assert all(len(e) == 16 for t in tables for e in t.column("embedding").to_pylist())
