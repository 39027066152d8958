"""Exit codes and messages a script can trust: 0 nothing failed, 1 something failed (stderr
says what), 2 the call itself was wrong; global flags before or after the subcommand; LLM flag
errors that name the missing flag or variable; placeholders of unread parts never memories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from memreader import cli
from memreader.cli.read import failure_lines
from memreader.embedders import register_embedder
from memreader.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.steps.report import PartReport, ReadReport, WindowReport
from tests.common import INFO
from tests.http_fixtures import FetchTestServer, answer
from tests.llm_server import LLMTestServer, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = "http://10.0.0.1/report.pdf"  # a private address: refused before any connection
UNREAD = "memreader: 1 of 1 files, images or audio parts could not be read (see --report)"


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMREADER_LLM_BACKEND", "MEMREADER_LLM_MODEL", "MEMREADER_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def chat_file(tmp_path: Path, scenes: Any = None) -> str:
    path = tmp_path / "chat.json"
    scenes = scenes or [[{"role": "user", "content": "I like oolong tea in the morning."}]]
    path.write_text(json.dumps(scenes), encoding="utf-8")
    return str(path)


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    """``memreader.cli.main(argv)``: the status, stdout and memreader's own stderr lines (logs
    may go there too when logging is set up; they are not what a script reads)."""
    if argv[:1] == ("read",):  # the machine form, and an owner (else stderr says whose)
        argv = (*argv, "--json", "--user-id", "u")
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("memreader:")]
    return status, captured.out, lines


def console_script() -> list[str]:
    script = Path(sys.executable).with_name("memreader")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memreader.cli"]


def run_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*console_script(), *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=300,
        check=False,
    )


# -- global flags after the subcommand ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [
        (["read", "x.json"], 0),
        (["-v", "read", "x.json"], 1),
        (["read", "x.json", "-v"], 1),
        (["read", "x.json", "--verbose"], 1),
        (["read", "-vv", "x.json"], 2),
        (["-vv", "read", "x.json"], 2),
        (["-v", "read", "x.json", "-v"], 2),
        (["models", "info", "-v"], 1),
        (["search", "tea", "-v", "--user-id", "u"], 1),
        (["ingest", "job.yaml", "-vv"], 2),
        (["forget", "--source", "doc:a", "-v"], 1),
    ],
)
def test_verbose_goes_before_or_after_the_subcommand(argv: list[str], verbose: int) -> None:
    args = cli.parse_args(argv)
    assert args.verbose == verbose
    assert "verbose_after_command" not in vars(args)


def test_verbose_after_the_subcommand_logs_in_a_real_process(tmp_path: Path) -> None:
    path = chat_file(tmp_path)
    for argv in (["-v", "read", path], ["read", path, "-v"]):
        result = run_process(*argv, "--no-embedding", "--no-progress", "--user-id", "u")
        assert result.returncode == 0, result.stderr
        assert result.stderr == "INFO memreader.cli.read: wrote 1 items\n"
    debug = run_process("read", path, "--no-embedding", "--no-progress", "-vv")
    assert debug.returncode == 0 and "DEBUG memreader.steps.read: 1 scenes, 1 windows" in (
        debug.stderr
    )


def test_an_unknown_flag_is_still_refused_with_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["read", chat_file(tmp_path), "--no-such-flag"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "memreader: error: unrecognized arguments: --no-such-flag"
    )


# -- read: 0 nothing failed, 1 something failed, 2 the call was wrong -----------------------------


def test_a_clean_read_exits_0_and_says_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, lines = run_main(
        capsys, "read", chat_file(tmp_path), "--no-embedding", "--no-progress"
    )
    assert (status, lines, len(out.splitlines())) == (0, [], 1)


def test_an_input_file_that_cannot_be_read_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.json")
    status, out, lines = run_main(capsys, "read", missing, "--no-progress")
    assert (status, out) == (2, "")
    assert lines == [f"memreader: error: cannot read {missing}: No such file or directory"]


def test_a_document_at_a_blocked_url_exits_1_and_makes_no_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    status, out, lines = run_main(
        capsys, "read", BLOCKED, "--type", "doc", "--no-progress", "--report", str(report)
    )
    assert status == 1
    assert out == "", "the placeholder of an unread file is no memory"
    assert lines == [UNREAD]
    data = json.loads(report.read_text(encoding="utf-8"))
    (window,) = data["windows"]
    assert window["status"] == "dropped"
    assert window["error"] == "only placeholders of parts that could not be read (see part_issues)"
    assert window["part_issues"][0]["status"] == "error"
    assert data["parts"][0]["error_type"] == "BlockedAddressError"


def test_a_document_that_answers_404_exits_1_in_a_real_process(tmp_path: Path) -> None:
    config = tmp_path / "reader.yaml"
    config.write_text(
        "backend: multimodal_struct\nconfig:\n  fetch:\n    allow_hosts: ['127.0.0.1']\n",
        encoding="utf-8",
    )
    out = tmp_path / "items.jsonl"
    with FetchTestServer() as server:
        url = server.route("/report.pdf", answer(b"not here", "text/plain", status=404))
        result = run_process(
            "read", url, "--type", "doc", "--config", str(config), "-o", str(out), "--no-progress"
        )
        assert server.hits["/report.pdf"] >= 1
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == UNREAD
    assert out.read_text(encoding="utf-8") == "", "no item, and no vector made for one"


def test_every_window_falling_back_exits_1_with_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: LLMTestServer
) -> None:
    llm_server.responder = lambda request: Reply(body=openai_completion("no JSON, sorry"))
    scenes = [[{"role": "user", "content": f"I like tea number {i}."}] for i in range(2)]
    status, out, lines = run_main(
        capsys,
        "read",
        chat_file(tmp_path, scenes),
        "--mode",
        "fine",
        "--llm-model",
        "m",
        "--llm-base-url",
        llm_server.url,
        "--no-embedding",
        "--no-progress",
    )
    assert status == 1
    assert lines == ["memreader: 2 of 2 windows fell back to raw items (see --report)"]
    items = [json.loads(line) for line in out.splitlines()]
    assert len(items) == 2 and all("fallback:parse_error" in i["metadata"]["tags"] for i in items)


class _BrokenEmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


@register_embedder("broken-cli-test")
class _BrokenEmbedder:
    """Every batch fails."""

    config_class = _BrokenEmbedderConfig
    name = "broken-cli-test"
    dimension = 4
    max_input_tokens = 10_000
    batch_size = 8

    def __init__(self, config: _BrokenEmbedderConfig) -> None:
        pass

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("the embedding server is down")


def test_items_without_a_vector_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "reader.yaml"
    config.write_text("config:\n  embedder:\n    backend: broken-cli-test\n", encoding="utf-8")
    scenes = [[{"role": "user", "content": f"I like tea number {i}."}] for i in range(3)]
    status, out, lines = run_main(
        capsys, "read", chat_file(tmp_path, scenes), "--config", str(config), "--no-progress"
    )
    assert status == 1
    assert lines == ["memreader: 3 items have no vector: embedding them failed (see --report)"]
    assert len(out.splitlines()) == 3, "the items are written all the same"


def test_failure_lines_name_each_kind_of_failure() -> None:
    report = ReadReport(
        windows=[
            WindowReport(0, 0, status="fallback"),
            WindowReport(0, 1, status="error"),
            WindowReport(0, 2, status="dropped"),
            WindowReport(0, 3),
        ],
        parts=[
            PartReport(0, 0, 0, "file", status="error"),
            PartReport(0, 1, 0, "image_url", status="fallback"),
            PartReport(0, 2, 0, "input_audio", status="unsupported"),
        ],
    )
    assert failure_lines(report, no_vector=2) == [
        "1 of 4 windows fell back to raw items (see --report)",
        "1 of 4 windows gave no item (see --report)",
        "1 of 3 files, images or audio parts could not be read (see --report)",
        "1 of 3 images could not be described; fallback items stand in (see --report)",
        "2 items have no vector: embedding them failed (see --report)",
    ]
    assert failure_lines(ReadReport(windows=[WindowReport(0, 0, status="dropped")])) == []


# -- placeholders of unread parts are no memories ---------------------------------------------


def multimodal(**config: Any) -> Any:
    return MemReaderFactory.from_config(
        MemReaderConfigFactory.from_dict(
            {"backend": "multimodal_struct", "config": {"embedder": None, **config}}
        )
    )


def test_a_window_of_only_an_unread_part_gives_no_item() -> None:
    report = ReadReport()
    scenes = [[{"role": "user", "content": [{"type": "file", "file": {"url": BLOCKED}}]}]]
    assert multimodal().get_memory(scenes, type="chat", info=INFO, report=report) == [[]]
    (window,) = report.windows
    assert window.status == "dropped" and window.part_issues[0]["status"] == "error"
    assert [p.status for p in report.parts] == ["error"]


def test_a_window_with_text_keeps_its_text_and_the_placeholder() -> None:
    scene = [
        {"role": "user", "content": "Here is the quarterly report I mentioned."},
        {"role": "user", "content": [{"type": "file", "file": {"url": BLOCKED}}]},
    ]
    report = ReadReport()
    ((item,),) = multimodal().get_memory([scene], type="chat", info=INFO, report=report)
    assert "quarterly report I mentioned" in item.memory
    assert "[file: report.pdf: not read (BlockedAddressError" in item.memory
    assert report.windows[0].status == "ok" and len(report.windows[0].part_issues) == 1


def test_a_document_of_text_and_an_unread_file_keeps_only_the_text_windows() -> None:
    report = ReadReport()
    doc = [
        {"type": "text", "text": "Minutes of the meeting. " * 60},
        {"type": "file", "file": {"url": BLOCKED}},
    ]
    reader = multimodal(window={"max_tokens": 64, "overlap_tokens": 0})
    (items,) = reader.get_memory([doc], type="doc", info=INFO, report=report)
    assert items and all("not read" not in item.memory for item in items)
    assert [w.status for w in report.windows][-1] == "dropped"
    assert all(w.status == "ok" for w in report.windows[:-1])


def test_fine_mode_asks_no_llm_about_a_placeholder(llm_server: LLMTestServer) -> None:
    reader = multimodal(llm={"model": "m", "base_url": llm_server.url})
    report = ReadReport()
    doc = [{"type": "file", "file": {"url": BLOCKED}}]
    result = reader.get_memory([doc], type="doc", info=INFO, mode="fine", report=report)
    assert result == [[]] and llm_server.requests == []
    assert [w.status for w in report.windows] == ["dropped"]


def test_the_simple_reader_keeps_a_file_reference_it_never_reads() -> None:
    reader = MemReaderFactory.from_config(
        MemReaderConfigFactory.from_dict({"backend": "simple_struct", "config": {"embedder": None}})
    )
    scenes = [[{"role": "user", "content": [{"type": "file", "file": {"url": BLOCKED}}]}]]
    ((item,),) = reader.get_memory(scenes, type="chat", info=INFO)
    assert item.memory == f"user: [file: {BLOCKED}]", "a reference, not a failed read"


# -- fine-mode LLM flags: messages that name what is missing ----------------------------------


@pytest.mark.parametrize(
    ("flags", "env", "message"),
    [
        (
            ["--llm-base-url", "http://127.0.0.1:9/v1"],
            {},
            "--llm-base-url needs --llm-model (or $MEMREADER_LLM_MODEL, or llm.model in the "
            "--config file)",
        ),
        (
            ["--llm-backend", "ollama", "--structured-output", "prompt"],
            {},
            "--llm-backend and --structured-output need --llm-model (or $MEMREADER_LLM_MODEL, "
            "or llm.model in the --config file)",
        ),
        (
            [],
            {"MEMREADER_LLM_BASE_URL": "http://127.0.0.1:9/v1"},
            "$MEMREADER_LLM_BASE_URL needs --llm-model (or $MEMREADER_LLM_MODEL, or llm.model "
            "in the --config file)",
        ),
        (
            [],
            {},
            "--mode fine needs an LLM: --llm-model M (and --llm-base-url URL for a local "
            "server), or `llm` in the --config file (see configs/fine_openai.yaml)",
        ),
        (
            ["--llm-model", "m", "--llm-api-key-env", "MR_TEST_UNSET_KEY"],
            {},
            "--llm-api-key-env: environment variable MR_TEST_UNSET_KEY is not set",
        ),
        (
            ["--llm-model", "m", "--llm-api-key-env", "MR_TEST_EMPTY_KEY"],
            {"MR_TEST_EMPTY_KEY": " "},
            "--llm-api-key-env: environment variable MR_TEST_EMPTY_KEY is empty",
        ),
    ],
    ids=["base-url", "two-flags", "env-base-url", "nothing", "unset-key", "empty-key"],
)
def test_llm_flag_errors_name_the_flag_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    monkeypatch.delenv("MR_TEST_UNSET_KEY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "items.jsonl"
    status, stdout, lines = run_main(
        capsys, "read", chat_file(tmp_path), "--mode", "fine", "-o", str(out), *flags
    )
    assert (status, stdout, lines) == (2, "", [f"memreader: error: {message}"])
    assert not out.exists(), "a call refused leaves no output"


def test_a_named_key_variable_is_sent_even_over_the_configs_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    llm_server: LLMTestServer,
) -> None:
    monkeypatch.setenv("MR_TEST_KEY", "sk-from-the-flag")
    memory = {"key": "tea", "memory_type": "UserMemory", "value": "The user likes tea."}
    answer = json.dumps({"memory_list": [{**memory, "tags": [], "source_ids": [1]}]})
    llm_server.responder = lambda request: Reply(body=openai_completion(answer))
    config = tmp_path / "reader.yaml"
    config.write_text(
        f"config:\n  embedder: null\n  llm:\n    model: m\n    base_url: {llm_server.url}\n"
        "    api_key: sk-from-the-config\n",
        encoding="utf-8",
    )
    status, _, lines = run_main(
        capsys,
        "read",
        chat_file(tmp_path),
        "--mode",
        "fine",
        "--config",
        str(config),
        "--llm-api-key-env",
        "MR_TEST_KEY",
        "--no-filter",
        "--no-rewrite",
        "--no-progress",
    )
    assert status == 0, lines
    assert {r.headers.get("authorization") for r in llm_server.requests} == {
        "Bearer sk-from-the-flag"
    }


# -- the other commands ------------------------------------------------------------------------


def test_store_commands_exit_2_for_a_store_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    for argv in (
        ["search", "tea", "--store", url, "--user-id", "u", "--no-embedding", "-v"],
        ["history", "some-id", "--store", url, "--user-id", "u"],
        ["forget", "--source", "doc:a.md", "--store", url, "--user-id", "u"],
        ["export-md", "--store", url, "--user", "u", "--out", str(tmp_path / "md")],
    ):
        status, out, lines = run_main(capsys, *argv)
        assert (status, out) == (2, ""), argv
        assert lines == [f"memreader: error: no memory store at {url} (no such file)"], argv


def test_a_batch_job_with_a_fallback_exits_1_as_read_does() -> None:
    from memreader.batch.job_run import JobSummary
    from memreader.batch.results import COUNTERS

    assert JobSummary().exit_code == 0
    assert JobSummary(counts={**dict.fromkeys(COUNTERS, 0), "fallbacks": 1}).exit_code == 1
    assert JobSummary(counts={**dict.fromkeys(COUNTERS, 0), "failures": 1}).exit_code == 1
