"""The CLI end to end, as a user runs it: a real process, the real local embedder, real data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MEMORYBANK_EN

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "memreader.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def memorybank_subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = json.loads(MEMORYBANK_EN.read_text(encoding="utf-8"))
    subset = {name: data[name] for name in list(data)[:2]}
    path = tmp_path_factory.mktemp("mb") / "memorybank_subset.json"
    path.write_text(json.dumps(subset), encoding="utf-8")
    return path


@pytest.mark.slow
def test_read_memorybank_with_the_local_embedder(memorybank_subset: Path, tmp_path: Path) -> None:
    out = tmp_path / "items.jsonl"
    result = run_cli(
        "read",
        str(memorybank_subset),
        "--type",
        "chat",
        "--mode",
        "fast",
        "-o",
        str(out),
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    data = json.loads(memorybank_subset.read_text(encoding="utf-8"))
    days = sum(len(u["history"]) for u in data.values())
    assert len(items) >= days
    users = {i["metadata"]["user_id"] for i in items}
    assert users == set(data)
    for item in items:
        embedding = item["metadata"]["embedding"]
        assert len(embedding) == 384
        assert abs(sum(x * x for x in embedding) - 1.0) < 1e-3
        for source in item["metadata"]["sources"]:
            user = data[item["metadata"]["user_id"]]
            day = list(user["history"])[source["scene_index"]]
            pair = user["history"][day][source["message_index"] // 2]
            text = pair["query" if source["role"] == "user" else "response"]
            start, end = source["span"]
            assert text[start:end] == source["content"]
            assert source["chat_time"] == day


def test_read_scene_file_to_stdout_with_batches(tmp_path: Path) -> None:
    scenes = [
        [{"role": "user", "content": f"Scene {i}: I like tea number {i}."}] for i in range(40)
    ]
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps(scenes), encoding="utf-8")
    result = run_cli("read", str(path), "--no-embedding", "--no-progress", "--tag", "cli")
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(items) == 40
    # Scene indexes refer to the whole input file, across the CLI's internal batches.
    assert [i["metadata"]["sources"][0]["scene_index"] for i in items] == list(range(40))
    assert all(i["metadata"]["embedding"] is None for i in items)
    assert all(i["metadata"]["tags"] == ["mode:fast", "cli"] for i in items)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('[[{"role": "robot", "content": "x"}]]', "scene 0, message 0: unknown role 'robot'"),
        ("[[]]", "scene 0: scene has no messages"),
        ("{not json", "is not valid JSON"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(tmp_path: Path, payload: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(payload, encoding="utf-8")
    result = run_cli("read", str(path), "--no-progress")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memreader: error:")
    assert message in lines[0]
    assert result.stdout == ""


def test_missing_input_and_bad_config(tmp_path: Path) -> None:
    result = run_cli("read", str(tmp_path / "nope.json"), "--no-progress")
    assert result.returncode == 2 and "cannot read" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: nope\n", encoding="utf-8")
    ok = tmp_path / "ok.json"
    ok.write_text('[[{"role": "user", "content": "x"}]]', encoding="utf-8")
    result = run_cli("read", str(ok), "--config", str(bad), "--no-progress")
    assert result.returncode == 2 and "unknown reader backend" in result.stderr


def test_fine_mode_without_llm_is_a_clear_error(tmp_path: Path) -> None:
    ok = tmp_path / "ok.json"
    ok.write_text('[[{"role": "user", "content": "x"}]]', encoding="utf-8")
    result = run_cli("read", str(ok), "--mode", "fine", "--no-progress")
    assert result.returncode == 2 and "needs an LLM" in result.stderr


def test_fine_mode_from_flags_and_environment(tmp_path: Path) -> None:
    import json as _json

    from .llm_server import LLMTestServer, Reply, openai_completion

    answer = _json.dumps(
        {
            "memory_list": [
                {
                    "key": "tea",
                    "memory_type": "UserMemory",
                    "value": "The user likes oolong tea.",
                    "tags": ["tea"],
                    "source_ids": [1],
                }
            ],
            "summary": "tea",
        }
    )
    scenes = tmp_path / "scenes.json"
    scenes.write_text(
        _json.dumps([[{"role": "user", "content": "I like oolong tea."}]] * 3), encoding="utf-8"
    )
    out, report = tmp_path / "items.jsonl", tmp_path / "report.json"
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(body=openai_completion(answer, usage=(50, 10)))
        env_key = "MR_CLI_TEST_KEY"
        os.environ[env_key] = "sk-cli-secret"
        try:
            result = run_cli(
                "read",
                str(scenes),
                "--mode",
                "fine",
                "--no-embedding",
                "--no-progress",
                "--llm-model",
                "test-model",
                "--llm-base-url",
                server.url,
                "--llm-api-key-env",
                env_key,
                "--no-rewrite",
                "-o",
                str(out),
                "--report",
                str(report),
            )
        finally:
            del os.environ[env_key]
        auth = {r.headers.get("authorization") for r in server.requests}
    assert result.returncode == 0, result.stderr
    items = [_json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [i["memory"] for i in items] == ["The user likes oolong tea."] * 3
    data = _json.loads(report.read_text(encoding="utf-8"))
    assert [w["status"] for w in data["windows"]] == ["ok"] * 3
    assert data["usage"]["requests"] == 6  # extraction + filter per window, no rewrite
    assert data["usage"]["total"]["prompt_tokens"] == 300
    assert auth == {"Bearer sk-cli-secret"}
    assert "sk-cli-secret" not in result.stderr + out.read_text(encoding="utf-8")


def test_fine_mode_fallbacks_are_announced(tmp_path: Path) -> None:
    from .llm_server import LLMTestServer, Reply

    scenes = tmp_path / "scenes.json"
    scenes.write_text('[[{"role": "user", "content": "I like tea."}]]', encoding="utf-8")
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(status=400, body={"error": {"message": "no"}})
        result = run_cli(
            "read",
            str(scenes),
            "--mode",
            "fine",
            "--no-embedding",
            "--no-progress",
            "--llm-model",
            "m",
            "--llm-base-url",
            server.url,
        )
    assert result.returncode == 0
    assert "1 of 1 windows fell back to raw items" in result.stderr
    [item] = [json.loads(line) for line in result.stdout.splitlines()]
    assert "fallback:llm_error" in item["metadata"]["tags"]


def test_progress_bar_goes_to_stderr(tmp_path: Path) -> None:
    scenes = [[{"role": "user", "content": f"Scene {i}."}] for i in range(40)]
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps(scenes), encoding="utf-8")
    shown = run_cli("read", str(path), "--no-embedding", "--progress")
    assert shown.returncode == 0
    assert "40/40" in shown.stderr and "scene" in shown.stderr
    assert len(shown.stdout.splitlines()) == 40, "the bar never mixes with the items"
    hidden = run_cli("read", str(path), "--no-embedding", "--no-progress")
    assert hidden.stderr == ""
