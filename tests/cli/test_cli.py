"""The CLI end to end, as a user runs it: a real process, the real local embedder, real data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memreader import cli
from memreader.cli import read as cli_read
from memreader.readers.simple import SimpleStructMemReader
from tests.common import MEMORYBANK_EN

ROOT = Path(__file__).resolve().parents[2]


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
    result = run_cli("read", str(path), "--no-embedding", "--no-progress", "--tag", "cli", "--json")
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

    from tests.llm_server import LLMTestServer, Reply, openai_completion

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

        def respond(request: Any) -> Reply:
            # The extraction gets memories, the filter a verdict of its own schema.
            schema = (request.json or {}).get("response_format", {}).get("json_schema", {})
            content = answer if schema.get("name") == "memory_extraction" else '{"results": []}'
            return Reply(body=openai_completion(content, usage=(50, 10)))

        server.responder = respond
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
    assert {"normalize", "extract", "filter", "fine_items"} <= set(data["steps"])
    assert "rewrite" not in data["steps"], "--no-rewrite takes the step out"
    assert auth == {"Bearer sk-cli-secret"}
    assert "sk-cli-secret" not in result.stderr + out.read_text(encoding="utf-8")


def test_fine_mode_fallbacks_are_announced(tmp_path: Path) -> None:
    from tests.llm_server import LLMTestServer, Reply

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
            "--json",
            "--no-check",  # the windows, not the check, meet the refusals
        )
    # Every window fell back: something failed, and the exit status says so.
    assert result.returncode == 1
    assert "memreader: 1 of 1 windows fell back to raw items (see --report)" in result.stderr
    [item] = [json.loads(line) for line in result.stdout.splitlines()]
    assert "fallback:llm_error" in item["metadata"]["tags"]


def test_progress_bar_goes_to_stderr(tmp_path: Path) -> None:
    scenes = [[{"role": "user", "content": f"Scene {i}."}] for i in range(40)]
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps(scenes), encoding="utf-8")
    shown = run_cli("read", str(path), "--no-embedding", "--progress", "--json")
    assert shown.returncode == 0
    assert "40/40" in shown.stderr and "scene" in shown.stderr
    assert len(shown.stdout.splitlines()) == 40, "the bar never mixes with the items"
    hidden = run_cli("read", str(path), "--no-embedding", "--no-progress", "--user-id", "u")
    assert hidden.stderr == ""


# -- in-process: one line and exit 2 (or 1), never a traceback ----------------------------------

SCENE = '[[{"role": "user", "content": "I like tea"}]]'


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """``memreader.cli.main`` in this process: status, stderr lines, stdout."""
    code = cli.main(["read", *args, "--no-embedding", "--no-progress", "--json"])
    captured = capsys.readouterr()
    return code, captured.err.splitlines(), captured.out


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def assert_one_line(lines: list[str], *expected: str, prefix: str = "memreader: error: ") -> None:
    assert len(lines) == 1, lines
    assert lines[0].startswith(prefix), lines
    for text in expected:
        assert text in lines[0]
    assert "Traceback" not in lines[0]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'[[{"role": "user", "content": "caf\xe9"}]]',
            "is not UTF-8 text (byte 0xe9 at offset 34)",
        ),
        ("[" * 100_000 + "]" * 100_000, "nests JSON too deeply"),
        ("{not json", "is not valid JSON"),
        ('[[{"role": "user", "content": "\\ud800"}]]', "scene 0, message 0: content holds a lone"),
        (
            '{"ann": {"history": {"2023-05-01": [{"query": "hi", "response": "hello"}, '
            '{"query": "tea?", "response": null}]}}}',
            "user 'ann', day '2023-05-01', pair 1: 'response' must be a string, got NoneType",
        ),
        (
            '{"ann": {"history": {"2023-05-01": [{"query": 7, "response": "x"}]}}}',
            "user 'ann', day '2023-05-01', pair 0: 'query' must be a string, got int",
        ),
    ],
)
def test_bad_input_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, expected: str
) -> None:
    path = write(tmp_path / "in.json", content)
    out = tmp_path / "items.jsonl"
    code, err, _ = run_main(capsys, str(path), "-o", str(out))
    assert code == 2
    assert_one_line(err, expected)
    assert not out.exists() and os.listdir(tmp_path) == ["in.json"], "no output, no temp file"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"backend: simple_struct\nconfig: {window: {max_tokens: \xff}}\n", "is not valid UTF-8"),
        ("config: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),
        ("backend: nope\n", "unknown reader backend"),
    ],
)
def test_bad_configs_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, expected: str
) -> None:
    config = write(tmp_path / "config.yaml", content)
    scenes = write(tmp_path / "in.json", SCENE)
    code, err, out = run_main(capsys, str(scenes), "--config", str(config))
    assert code == 2 and out == ""
    assert_one_line(err, expected)


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_unwritable_outputs_fail_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reader was built before the outputs were checked")

    monkeypatch.setattr(cli_read.MemReaderFactory, "from_config", no_work)
    scenes = write(tmp_path / "in.json", SCENE)
    blocker = write(tmp_path / "plain-file", "")  # a file where a folder is needed
    items = tmp_path / "items.jsonl"
    args = ["-o", str(items), "--report", str(tmp_path / "report.json")]
    args[args.index(flag) + 1] = str(blocker / "out.json")
    code, err, _ = run_main(capsys, str(scenes), *args)
    assert code == 2
    what = "output" if flag == "-o" else "report"
    assert_one_line(err, f"cannot write {what} {blocker / 'out.json'}: Not a directory")
    assert sorted(os.listdir(tmp_path)) == ["in.json", "plain-file"], "nothing half-written"
    code, err, _ = run_main(capsys, str(scenes), "-o", str(tmp_path))
    assert code == 2
    assert_one_line(err, f"cannot write output {tmp_path}: it is a directory")


def test_a_failed_run_leaves_the_old_output_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenes = [[{"role": "user", "content": f"Scene {i}."}] for i in range(40)]
    path = write(tmp_path / "in.json", json.dumps(scenes))
    out = write(tmp_path / "items.jsonl", "old items\n")
    original = SimpleStructMemReader.get_memory
    calls = []

    def fail_on_second_batch(self: SimpleStructMemReader, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SimpleStructMemReader, "get_memory", fail_on_second_batch)
    code, err, _ = run_main(capsys, str(path), "-o", str(out))
    assert code == 1
    assert_one_line(
        err,
        "RuntimeError: disk on fire (run with -v for the traceback)",
        prefix="memreader: internal error: ",
    )
    assert out.read_text(encoding="utf-8") == "old items\n"
    assert sorted(os.listdir(tmp_path)) == ["in.json", "items.jsonl"]
    monkeypatch.setattr(SimpleStructMemReader, "get_memory", original)
    code, _, _ = run_main(capsys, str(path), "-o", str(out), "--report", str(tmp_path / "r.json"))
    assert code == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 40
    assert len(json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["windows"]) == 40
    assert sorted(os.listdir(tmp_path)) == ["in.json", "items.jsonl", "r.json"]


def test_unexpected_errors_show_their_traceback_only_with_verbose(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(SimpleStructMemReader, "get_memory", boom)
    path = write(tmp_path / "in.json", SCENE)
    code = cli.main(["-v", "read", str(path), "--no-embedding", "--no-progress"])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err == ["memreader: internal error: KeyError: 'boom'"]
    [record] = [r for r in caplog.records if r.name == "memreader.cli" and r.exc_info]
    assert record.exc_info is not None and record.exc_info[0] is KeyError


def test_type_doc_reads_the_file_as_one_document_whatever_its_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '[[{"role": "user", "content": "this is a document, not scenes"}]]\n'
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = write(elsewhere / "notes.json", text)
    monkeypatch.chdir(tmp_path)  # the file is not under the working folder
    code, err, out = run_main(capsys, str(path), "--type", "doc")
    assert code == 0, err
    [item] = [json.loads(line) for line in out.splitlines()]
    [source] = item["metadata"]["sources"]
    assert (source["type"], source["doc_path"], source["content"]) == ("file", str(path), text)
    assert item["metadata"]["file_ids"] == [str(path)]
    code, err, _ = run_main(capsys, str(tmp_path / "missing.txt"), "--type", "doc")
    assert code == 2
    assert_one_line(err, "missing.txt: no such file")


def test_only_the_named_document_is_allowed(tmp_path: Path) -> None:
    parser = cli.build_parser()
    path = write(tmp_path / "a.txt", "text")
    doc = cli_read.reader_config(parser.parse_args(["read", str(path), "--type", "doc"])).config
    assert doc.allow_local_paths is True
    assert doc.allowed_roots == [os.path.realpath(path)]
    chat = cli_read.reader_config(parser.parse_args(["read", str(path)])).config
    assert chat.allow_local_paths is False and chat.allowed_roots == []


def test_doc_from_standard_input_is_text_never_a_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"/etc/passwd"), "utf-8"))
    code, err, out = run_main(capsys, "-", "--type", "doc")
    assert code == 0, err
    [item] = [json.loads(line) for line in out.splitlines()]
    assert item["memory"] == "/etc/passwd"


def test_output_through_a_symlink_writes_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenes = write(tmp_path / "in.json", SCENE)
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    link.symlink_to(real)
    code, err, _ = run_main(capsys, str(scenes), "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and len(real.read_text(encoding="utf-8").splitlines()) == 1
    umask = os.umask(0)
    os.umask(umask)
    assert real.stat().st_mode & 0o777 == 0o666 & ~umask, "a new file gets the usual mode"
