"""The memory store wired into memreader (issue 19): batch jobs with a ``store`` output, the
``dedup`` step that spares stored items their embedding, and the ``search``, ``history``,
``forget`` and ``read --store`` commands.

Embedding calls are counted with ``counting_hash``, the ``hash`` test embedder registered under
another name through the real registry."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from memreader import ConfigError, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.batch.fingerprint import input_fingerprints
from memreader.batch.job import OutputSpec, load_job
from memreader.batch.job_run import run_job
from memreader.batch.plan import plan_job
from memreader.batch.sinks import store as store_sink
from memreader.categories.config import CategoriesConfig
from memreader.cli import main
from memreader.embedders import register_embedder
from memreader.steps.report import ReadReport
from memreader.stores import open_store
from memreader.stores.urls import public_url
from memreader.testing import HashEmbedder

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]


@register_embedder("counting_hash")
class CountingHash(HashEmbedder):
    """The ``hash`` embedder, counting the texts every instance embeds (in this process)."""

    texts: ClassVar[list[str]] = []

    def embed(self, texts: Any) -> list[list[float]]:
        CountingHash.texts.extend(texts)
        return super().embed(texts)


COUNTING = {"backend": "simple_struct", "config": {"embedder": {"backend": "counting_hash"}}}


@pytest.fixture(autouse=True)
def _no_counts() -> None:
    CountingHash.texts.clear()


def scenes(tag: str, n: int, *, changed: int | None = None) -> list[list[dict[str, str]]]:
    """``n`` two-message scenes; scene ``changed`` says something else."""
    out = []
    for k in range(n):
        word = "coffee" if k == changed else "tea"
        out.append(
            [
                {"role": "user", "content": f"{tag}: day {k}, I drank {word} number {k}."},
                {"role": "assistant", "content": f"Noted, {tag} {k}."},
            ]
        )
    return out


def write_input(path: Path, data: Any) -> None:
    path.write_text("\n".join(json.dumps(s) for s in data) + "\n", encoding="utf-8")


def write_job(folder: Path, output: dict[str, Any], **extra: Any) -> Path:
    job = {
        "reader": COUNTING,
        "inputs": [
            {"path": "in", "format": "jsonl", "user_id": {"from": "constant", "value": "u1"}}
        ],
        "output": output,
        **extra,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def rows(db: Path) -> list[tuple[str, str, str, str]]:
    """Every memory row: owner, id, status, text."""
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT user_id, id, status, memory FROM memories"))


#: What the categorize step embeds on a reader's first call, beside the items.
DESCRIPTIONS = {c.description for c in CategoriesConfig().all()}


def _passage(text: str) -> bool:
    """A passage text the store embeds beside an item (``Name: content`` lines: these chats'
    items are embedded without the speakers' names)."""
    return text.startswith(("user: ", "assistant: "))


def embedded_items() -> list[str]:
    """What was embedded for items: the texts less the category descriptions and the passages
    the store embeds (a job's store is a Memory's, opened with the reader's embedder)."""
    return [t for t in CountingHash.texts if t not in DESCRIPTIONS and not _passage(t)]


def embedded_passages() -> list[str]:
    """What the store embedded for the passages of the memories it added."""
    return [t for t in CountingHash.texts if _passage(t)]


def history_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM history").fetchone()[0])


# -- batch jobs -------------------------------------------------------------------------------


def test_a_job_into_a_sqlite_store_and_its_rerun(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    write_input(tmp_path / "in" / "a.jsonl", scenes("a", 4))
    write_input(tmp_path / "in" / "b.jsonl", scenes("b", 3))
    job = load_job(write_job(tmp_path, {"store": "sqlite:///m.db"}))
    assert job.output.format == "store" and job.output.path == "m.db.batch"
    summary = run_job(job)
    assert summary.exit_code == 0 and summary.counts["items"] == 7
    assert summary.counts["embeddings"] == 7 and len(embedded_items()) == 7
    # Each memory's passages (two messages, and the two read together) are embedded once,
    # as a Memory's add embeds them: search scores these rows message by message.
    assert len(embedded_passages()) == 7 * 3
    stored = rows(tmp_path / "m.db")
    assert len(stored) == 7 and {r[2] for r in stored} == {"active"}
    manifest = json.loads((tmp_path / "m.db.batch" / "_manifest.json").read_text())
    entry = manifest["inputs"]["in/a.jsonl"]
    assert entry["status"] == "done"
    assert entry["outputs"] == [f"sqlite:///{tmp_path / 'm.db'} (input:in/a.jsonl)"]
    assert (tmp_path / "m.db.batch" / "_summary.json").exists()
    with open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True) as store:
        hit = store.search("a: day 2", user_id="u1", k=1)[0]
        assert "a: day 2" in hit.memory.item.memory
    # Re-ingesting what is stored: the same rows, no history, nothing embedded.
    CountingHash.texts.clear()
    before = history_count(tmp_path / "m.db")
    again = run_job(job, restart=True)
    assert again.read == 2 and again.counts["items"] == 7 and again.counts["embeddings"] == 0
    assert embedded_items() == [] and embedded_passages() == []
    assert rows(tmp_path / "m.db") == stored and history_count(tmp_path / "m.db") == before


def test_a_changed_input_supersedes_its_old_memories(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    write_input(tmp_path / "in" / "a.jsonl", scenes("a", 3))
    job = load_job(write_job(tmp_path, {"store": "sqlite:///m.db"}))
    run_job(job)
    first = {r[1]: r for r in rows(tmp_path / "m.db")}
    write_input(tmp_path / "in" / "a.jsonl", scenes("a", 3, changed=1))
    CountingHash.texts.clear()
    summary = run_job(job)  # the manifest sees the new content
    assert summary.read == 1 and len(embedded_items()) == 1  # only the changed scene
    assert len(embedded_passages()) == 3  # and its passages
    now = {r[1]: r for r in rows(tmp_path / "m.db")}
    assert len(now) == 4
    old = [i for i in first if "coffee" not in first[i][3] and "day 1" in first[i][3]]
    assert [now[i][2] for i in old] == ["superseded"]
    new = [r for r in now.values() if "coffee" in r[3]]
    assert [r[2] for r in new] == ["active"]
    assert sorted(r[2] for r in now.values()) == ["active", "active", "active", "superseded"]
    with open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True) as store:
        events = [e.event for e in store.history(old[0], user_id="u1")]
    assert events == ["ADD", "SUPERSEDE"]


def test_a_failed_input_leaves_what_was_committed_and_a_rerun_gives_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts of a changed input are written, then the run dies before its commit; the next
    run gives the rows of an uninterrupted run."""

    def run(folder: Path, *, die: bool) -> list[tuple[str, str, str, str]]:
        (folder / "in").mkdir(parents=True)
        write_input(folder / "in" / "a.jsonl", scenes("a", 4))
        job = load_job(write_job(folder, {"store": "sqlite:///m.db"}, scenes_per_call=1))
        run_job(job)
        write_input(folder / "in" / "a.jsonl", scenes("a", 4, changed=0))
        if die:
            monkeypatch.setattr(store_sink, "PART_ITEMS", 1)
            original = store_sink.StoreInputWriter.commit

            def killed(self: store_sink.StoreInputWriter) -> list[str]:
                raise SystemExit("killed")

            monkeypatch.setattr(store_sink.StoreInputWriter, "commit", killed)
            with pytest.raises(SystemExit):
                run_job(job)
            # Written parts are there, beside what the first run committed (nothing retired).
            assert sorted(r[2] for r in rows(folder / "m.db")) == ["active"] * 5
            monkeypatch.setattr(store_sink.StoreInputWriter, "commit", original)
        run_job(job)
        return rows(folder / "m.db")

    assert run(tmp_path / "killed", die=True) == run(tmp_path / "fresh", die=False)


def test_a_sigkilled_store_job_resumes_to_the_same_rows(tmp_path: Path) -> None:
    def job_in(folder: Path) -> Path:
        (folder / "in").mkdir(parents=True)
        for k in range(10):
            write_input(folder / "in" / f"c{k:02d}.jsonl", scenes(f"k{k}", 3))
        slow = {
            "backend": "simple_struct",
            "config": {
                "embedder": {"backend": "hash"},
                "pipeline": {
                    "insert_before": {"embed": [{"step": "tests.batch.jobs:Slow"}]},
                    "allow_imports": True,
                },
            },
        }
        return write_job(folder, {"store": "sqlite:///m.db"}, reader=slow)

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "memreader.cli", "ingest"]
    job = job_in(tmp_path / "killed")
    process = subprocess.Popen([*command, str(job), "--quiet"], env=env)
    manifest = tmp_path / "killed" / "m.db.batch" / "_manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if manifest.exists() and len(json.loads(manifest.read_text())["inputs"]) >= 2:
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert subprocess.run([*command, str(job), "--quiet"], env=env, timeout=240).returncode == 0
    fresh = job_in(tmp_path / "fresh")
    assert subprocess.run([*command, str(fresh), "--quiet"], env=env, timeout=240).returncode == 0
    killed_rows = rows(tmp_path / "killed" / "m.db")
    assert killed_rows == rows(tmp_path / "fresh" / "m.db") and len(killed_rows) == 30


def test_store_outputs_are_checked_and_keep_their_password(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"output\.path is required with a postgresql store"):
        OutputSpec.model_validate({"store": "postgresql://ana:s3cret@db/mem"})
    with pytest.raises(ConfigError, match=r"needs output\.store"):
        OutputSpec.model_validate({"path": "out", "format": "store"})
    with pytest.raises(ConfigError, match="written by format: store"):
        OutputSpec.model_validate({"store": "sqlite:///m.db", "format": "jsonl"})
    spec = OutputSpec.model_validate({"store": "postgresql://ana:s3cret@db/mem", "path": "out"})
    assert "s3cret" not in repr(spec) and "s3cret" not in spec.model_dump_json()
    assert public_url("postgresql://ana:s3cret@db/mem?password=x") == (
        "postgresql://ana:***@db/mem?password=***"
    )
    (tmp_path / "in").mkdir()
    first = load_job(write_job(tmp_path, {"store": "postgresql://ana:one@db/mem", "path": "o"}))
    second = load_job(write_job(tmp_path, {"store": "postgresql://ana:two@db/mem", "path": "o"}))
    other = load_job(write_job(tmp_path, {"store": "postgresql://ana:two@db/other", "path": "o"}))
    # The store is part of the fingerprint; its password is not.
    fingerprints = [input_fingerprints(j, plan_job(j).reader) for j in (first, second, other)]
    assert fingerprints[0] == fingerprints[1] != fingerprints[2]


# -- the dedup step ---------------------------------------------------------------------------


def reader(store: str | None, **config: Any) -> SimpleStructMemReader:
    return SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder={"backend": "counting_hash"}, store=store, **config)
    )


def test_dedup_skips_embedding_stored_items_and_is_removable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    info = {"user_id": "u1", "session_id": "s1"}
    data = scenes("d", 3)
    plain = reader(None).get_memory(data, type="chat", info=info)
    assert len(embedded_items()) == 3
    with open_store(url, text_only=True) as store:
        store.write([plain[0][0], plain[1][0]])
    CountingHash.texts.clear()
    deduped = reader(url)
    report = ReadReport()
    got = deduped.get_memory(data, type="chat", info=info, report=report)
    deduped.close()
    assert [[i.id for i in s] for s in got] == [[i.id for i in s] for s in plain]
    assert len(embedded_items()) == 1  # only the item the store does not have
    assert [s[0].metadata.embedding is None for s in got] == [True, True, False]
    assert report.resources["already_stored"] == 2
    assert report.windows[0].notes == [f"item {got[0][0].id}: already stored: NONE"]
    # Written into the store without vectors, the stored ones are NONE.
    with open_store(url, text_only=True) as store:
        assert [e.event for e in store.write([i for s in got for i in s])] == [
            "NONE",
            "NONE",
            "ADD",
        ]
    CountingHash.texts.clear()
    removed = reader(url, pipeline={"remove": ["dedup"]})
    assert "dedup" not in removed.pipeline.names
    removed.get_memory(data, type="chat", info=info)
    assert len(embedded_items()) == 3


# -- the command line -------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(scenes("c", 3)), encoding="utf-8")
    (tmp_path / "hash.yaml").write_text(
        yaml.safe_dump({"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}})
    )
    return path


def test_read_into_a_store_then_search_history_and_forget(
    tmp_path: Path, chat_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    config = str(tmp_path / "hash.yaml")
    args = ["read", str(chat_file), "--config", config, "--user-id", "u1", "--session-id", "s1"]
    code, out, err = run_cli(capsys, *args, "--store", url)
    assert code == 0 and out == ""
    assert f"memreader: {url}: 3 items written (ADD 3)" in err.splitlines()
    code, out, err = run_cli(capsys, *args, "--store", url, "-o", str(tmp_path / "items.jsonl"))
    assert code == 0 and f"memreader: {url}: 3 items written (NONE 3)" in err.splitlines()
    assert len((tmp_path / "items.jsonl").read_text().splitlines()) == 3

    common = ["--store", url, "--user-id", "u1"]
    code, out, _ = run_cli(capsys, "search", "1", *common, "--config", config, "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and "c: day 1," in hits[0]["memory"] and hits[0]["score"]["text_rank"] == 1
    assert set(hits[0]["score"]) == {
        "final",
        "relevance",
        "fused",
        "similarity",
        "text_rank",
        "importance",
        "decay",
        "passage",
        "heat",
    }
    assert hits[0]["status"] == "active" and hits[0]["user_id"] == "u1"
    first = hits[0]["id"]
    code, out, _ = run_cli(capsys, "search", "1", *common, "--no-embedding", "-k", "1")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].startswith(f"1. {first}  final=")
    assert "similarity=- text_rank=1 importance=" in lines[0]
    assert lines[1].startswith("   user: ") and "c: day 1," in lines[1]
    assert lines[2] == "   session s1: scene 1, messages 0-1"  # its sources
    code, out, _ = run_cli(capsys, "search", "1", *common, "--mode", "text", "-k", "1")
    assert code == 0 and out.splitlines()[0] == lines[0], "text mode needs no query vector"
    code, _, err = run_cli(capsys, "search", "1", *common, "--mode", "vector", "--no-embedding")
    assert code == 2 and "--mode vector needs a query vector" in err

    code, out, _ = run_cli(capsys, "history", first, *common)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"{first} [active] user: ")
    assert len(lines) == 2 and lines[1].endswith("  ADD       new memory")

    code, out, err = run_cli(capsys, "forget", *common, "--source", "session:s1", "--json")
    events = json.loads(out)["events"]
    assert code == 0 and [e["event"] for e in events] == ["EXPIRE"] * 3
    assert {e["reason"] for e in events} == {"session:s1 was forgotten"}
    code, out, _ = run_cli(capsys, "history", first, *common, "--json")
    assert [h["event"] for h in json.loads(out)["history"]] == ["ADD", "EXPIRE"]
    code, out, _ = run_cli(capsys, "search", "1", *common, "--no-embedding")
    assert code == 0 and out == ""
    code, out, _ = run_cli(capsys, "search", "1", *common, "--no-embedding", "--all")
    assert out.splitlines()[0].startswith(f"1. {first} [expired]  final=")
    code, out, err = run_cli(capsys, "forget", *common, "--source", "session:s1")
    assert code == 0 and out == "" and err == "memreader: session:s1: nothing changed\n"


def test_store_commands_fail_with_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMREADER_STORE", raising=False)
    monkeypatch.setenv("MEMREADER_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'none.db'}"
    home_db = f"sqlite:///{tmp_path / 'home' / 'memories.db'}"
    cases = [
        # No --store: the home store, which nothing has made yet.
        (["search", "x", "--user-id", "u1"], f"no memory store at {home_db} (no such file)"),
        (["search", "x", "--store", db], "search needs --user-id (every memory has an owner)"),
        (["history", "id", "--store", db, "--user-id", "u1"], f"no memory store at {db}"),
        (["search", "x", "--store", "nope", "--user-id", "u1"], "a store URL looks like"),
        (["forget", "--store", "redis://h/0", "--user-id", "u1", "--source", "session:s"], "redis"),
    ]
    for argv, message in cases:
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and out == "" and message in err, (argv, err)
        assert err.startswith("memreader: error: ") and err.count("\n") == 1
    monkeypatch.setenv("MEMREADER_STORE", f"sqlite:///{tmp_path / 'env.db'}")
    open_store(os.environ["MEMREADER_STORE"], text_only=True).close()
    code, _, err = run_cli(capsys, "forget", "--user-id", "u1", "--source", "sesion:s")
    assert code == 2 and "--source 'sesion:s': expected doc:PATH" in err
    code, _, err = run_cli(capsys, "history", "nope", "--user-id", "u1")
    assert code == 2 and "user 'u1' has no memory 'nope'" in err
    secret = "postgresql://ana:s3cretpw@127.0.0.1:1/mem"
    code, _, err = run_cli(
        capsys, "search", "x", "--store", secret, "--user-id", "u1", "--no-embedding"
    )
    assert code == 2 and "s3cretpw" not in err and "127.0.0.1" in err
