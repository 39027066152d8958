"""Fine-mode benchmark against a local OpenAI-compatible server with injected latency.

Run by hand: ``.venv/bin/python benchmarks/fine_mode.py [--latency 0.2] [--concurrency 8]``.
The server (the test suite's scripted server on 127.0.0.1, in its own process) answers every
extraction with one
memory per message it was shown, and every filter/rewrite with an empty result, after
``--latency`` seconds. Measured on the MemoryBank English corpus: wall time against the ideal
(calls x latency / concurrency), LLM calls and prompt characters per 1,000 input characters,
with the filter and rewrite off and on. No embedding (``embedder: null``): this measures the
LLM path alone. Each reader is warmed up with one small call first (client import and
connections), so the timed run is the steady state.

Then every fine pass on (``fine.passes``: extract, filter, rewrite, tool, preference, skill,
tool_schema) with the simple and the strategy reader, on MemoryBank (no tool traffic: the tool
and skill passes skip every window) and on generated agent conversations (a request, a tool
call, its result, the answer): LLM calls and prompt characters per input character, per pass.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import platform
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = ROOT / "data" / "memorybank" / "memory_bank_en.json"
sys.path.insert(0, str(ROOT))

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig  # noqa: E402
from memreader.extraction.agent_prompts import (  # noqa: E402
    PREFERENCE_SYSTEM,
    SKILL_SYSTEM,
    STRATEGY_EXTRACT_SYSTEM,
    TOOL_SYSTEM,
)
from memreader.extraction.prompts import EXTRACT_SYSTEM, FILTER_SYSTEM, REWRITE_SYSTEM  # noqa: E402
from memreader.readers import StrategyStructMemReader, StrategyStructMemReaderConfig  # noqa: E402
from memreader.scenes.memorybank import load_memorybank  # noqa: E402
from memreader.steps.report import ReadReport  # noqa: E402
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, openai_completion  # noqa: E402

# MemOS 2.0.31's simple reader: ~4.6 prompt characters per input character (252 calls for
# 2,000 messages of ~250 characters), as given in the issue that asked for this benchmark.
MEMOS_PROMPT_CHARS_PER_INPUT_CHAR = 4.6


def responder(request: RecordedRequest) -> Reply:
    body = request.json or {}
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if name == "memory_extraction":
        ids = [int(n) for n in re.findall(r"^\[(\d+)\]", body["messages"][-1]["content"], re.M)]
        memories = [
            {
                "key": f"m{i}",
                "memory_type": "LongTermMemory",
                "value": f"fact {i}",
                "tags": [],
                "source_ids": [i],
            }
            for i in ids
        ]
        content = json.dumps({"memory_list": memories, "summary": "a day of conversation"})
    elif name in PASS_ANSWERS:
        content = json.dumps(PASS_ANSWERS[name])
    else:
        content = json.dumps({"results": []})
    return Reply(body=openai_completion(content, usage=(len(str(body)) // 4, 50)))


# What the extra passes answer: one entry each, citing the window's first line.
PASS_ANSWERS: dict[str, Any] = {
    "tool_trajectories": {
        "trajectories": [
            {
                "task": "look up",
                "tool": "search",
                "arguments": "{}",
                "outcome": "success",
                "result": "ok",
                "lesson": "works",
                "source_ids": [1],
            }
        ]
    },
    "preferences": {
        "preferences": [
            {"preference": "likes tea", "kind": "explicit", "topic": "tea", "source_ids": [1]}
        ]
    },
    "skills": {
        "skills": [
            {
                "name": "look up",
                "description": "d",
                "steps": ["call search"],
                "inputs": ["q"],
                "tools": ["search"],
                "source_ids": [1],
            }
        ]
    },
}

#: Each pass's system prompts (both languages), to tell its requests apart client-side.
PASS_PROMPTS = {
    "extract": (EXTRACT_SYSTEM, STRATEGY_EXTRACT_SYSTEM),
    "filter": (FILTER_SYSTEM,),
    "rewrite": (REWRITE_SYSTEM,),
    "tool": (TOOL_SYSTEM,),
    "preference": (PREFERENCE_SYSTEM,),
    "skill": (SKILL_SYSTEM,),
}
ALL_PASSES = ["extract", "filter", "rewrite", "tool", "preference", "skill", "tool_schema"]


def pass_of(messages: Any) -> str:
    """The pass a request belongs to, by its system prompt."""
    system = str(messages[0].get("content") or "")
    for name, prompts in PASS_PROMPTS.items():
        for by_language in prompts:
            if any(system.startswith(text) for text in by_language.values()):
                return name
    return "other"


def agent_scenes(count: int) -> list[list[dict[str, Any]]]:
    """Generated agent conversations: a request, a tool call, its result and the answer."""
    scenes = []
    for k in range(count):
        city = ["Oslo", "Lisbon", "Kyoto", "Lima"][k % 4]
        scenes.append(
            [
                {
                    "role": "user",
                    "content": f"I prefer window seats. What's the weather in {city} on day {k}?",
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{k}",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": json.dumps({"city": city, "day": k}),
                            },
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": f"c{k}",
                    "content": json.dumps({"temp_c": k % 30, "sky": "clear"}),
                },
                {
                    "role": "assistant",
                    "content": f"It will be {k % 30} degrees and clear in {city}.",
                },
            ]
        )
    return scenes


class PassCounter:
    """Requests and prompt characters per pass, client-side through the reader's hooks."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.chars: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        name = pass_of(event.messages)
        size = sum(len(str(m.get("content") or "")) for m in event.messages)
        with self.lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            self.chars[name] = self.chars.get(name, 0) + size


def run_passes(
    url: str, scenes: list[Any], concurrency: int, reader_name: str, corpus: str
) -> dict[str, Any]:
    """Every pass on, with the simple or the strategy reader: calls and prompt characters per
    input character, per pass."""
    settings: dict[str, Any] = {
        "embedder": None,
        "llm": {"backend": "openai", "model": "bench", "base_url": url, "timeout": 30},
        "llm_max_concurrency": concurrency,
        "fine": {"passes": ALL_PASSES},
    }
    reader: Any = (
        StrategyStructMemReader(StrategyStructMemReaderConfig(**settings))
        if reader_name == "strategy"
        else SimpleStructMemReader(SimpleStructMemReaderConfig(**settings))
    )
    info = {"user_id": "b", "session_id": "b"}
    counter = PassCounter()
    reader.hooks.before_call.append(counter)
    input_chars = sum(len(str(m.get("content") or "")) for scene in scenes for m in scene)
    report = ReadReport()
    start = time.perf_counter()
    reader.get_memory(scenes, type="chat", info=info, mode="fine", report=report)
    wall = time.perf_counter() - start
    return {
        "reader": reader_name,
        "corpus": corpus,
        "windows": len(report.windows),
        "wall_s": round(wall, 2),
        "input_chars": input_chars,
        "passes": {
            name: {
                "calls": counter.calls.get(name, 0),
                "calls_per_1k_chars": round(1000 * counter.calls.get(name, 0) / input_chars, 3),
                "prompt_chars_per_input_char": round(counter.chars.get(name, 0) / input_chars, 3),
                "items": report.passes[name].items if name in report.passes else 0,
            }
            for name in ("extract", "filter", "rewrite", "tool", "preference", "skill")
        },
    }


def serve(latency: float, ports: Any) -> None:
    """The server process: the scripted server with ``responder``, until killed."""
    server = LLMTestServer(latency=latency)
    server.responder = responder
    server.start()
    ports.put(server.port)
    threading.Event().wait()


class CallCounter:
    """Counts requests and prompt characters client-side, through the reader's hooks."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_chars = 0
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        with self.lock:
            self.calls += 1
            self.prompt_chars += sum(len(m.get("content") or "") for m in event.messages)


def run(
    url: str,
    latency: float,
    scenes: list[Any],
    concurrency: int,
    checks: bool,
    use_async: bool,
) -> dict[str, Any]:
    config = SimpleStructMemReaderConfig(
        embedder=None,
        llm={"backend": "openai", "model": "bench", "base_url": url, "timeout": 30},
        llm_max_concurrency=concurrency,
        fine={"hallucination_filter": checks, "rewrite": "all" if checks else "off"},
    )
    reader = SimpleStructMemReader(config)
    info = {"user_id": "b", "session_id": "b"}
    # Warm up (imports the openai client, opens connections) outside the timed run.
    warm = [[{"role": "user", "content": "warm-up"}]] * concurrency
    reader.get_memory(warm, type="chat", info=info, mode="fine")
    counter = CallCounter()
    reader.hooks.before_call.append(counter)
    input_chars = sum(len(m["content"]) for scene in scenes for m in scene)
    report = ReadReport()
    start = time.perf_counter()
    if use_async:

        async def read() -> list[Any]:
            try:
                return await reader.aget_memory(
                    scenes, type="chat", info=info, mode="fine", report=report
                )
            finally:
                await reader.aclose()  # async clients belong to this loop

        result = asyncio.run(read())
    else:
        result = reader.get_memory(scenes, type="chat", info=info, mode="fine", report=report)
    wall = time.perf_counter() - start
    ideal = counter.calls * latency / concurrency
    return {
        "checks": "filter+rewrite" if checks else "off",
        "driver": "async" if use_async else "threads",
        "windows": len(report.windows),
        "items": sum(len(items) for items in result),
        "calls": counter.calls,
        "max_in_flight": reader.llm.limiter.max_in_use,
        "wall_s": wall,
        "ideal_s": ideal,
        "ideal_over_wall": ideal / wall,
        "calls_per_1k_chars": 1000 * counter.calls / input_chars,
        "prompt_chars_per_input_char": counter.prompt_chars / input_chars,
        "vs_memos": counter.prompt_chars / input_chars / MEMOS_PROMPT_CHARS_PER_INPUT_CHAR,
        "input_chars": input_chars,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--agent-scenes", type=int, default=100, help="generated agent conversations"
    )
    args = parser.parse_args()
    by_user = load_memorybank(MEMORYBANK)
    scenes = [scene for user_scenes in by_user.values() for scene in user_scenes]
    # The server runs in its own process so that it does not share this one's GIL.
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(args.latency, ports), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        rows = [
            run(url, args.latency, scenes, args.concurrency, checks, use_async)
            for checks, use_async in ((False, False), (False, True), (True, False), (True, True))
        ]
        agents = agent_scenes(args.agent_scenes)
        pass_rows = [
            run_passes(url, corpus_scenes, args.concurrency, reader_name, corpus)
            for corpus, corpus_scenes in (("memorybank", scenes), ("agent", agents))
            for reader_name in ("simple", "strategy")
        ]
    finally:
        server.kill()
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}; latency "
        f"{args.latency * 1000:.0f} ms per call, concurrency {args.concurrency}; "
        f"{rows[0]['input_chars']} input characters\n"
    )
    print(
        "| checks | driver | windows | calls | max in flight | wall s | ideal s | ideal/wall "
        "| calls per 1k chars | prompt chars per input char | vs MemOS |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['checks']} | {r['driver']} | {r['windows']} | {r['calls']} "
            f"| {r['max_in_flight']} "
            f"| {r['wall_s']:.2f} | {r['ideal_s']:.2f} | {r['ideal_over_wall']:.3f} "
            f"| {r['calls_per_1k_chars']:.3f} | {r['prompt_chars_per_input_char']:.2f} "
            f"| {r['vs_memos']:.2f} |"
        )
    print(
        "\nEvery pass on (fine.passes = all): per pass, LLM calls and prompt characters per "
        "input character\n"
    )
    print(
        "| reader | corpus | windows | pass | calls | calls per 1k chars "
        "| prompt chars per input char | items |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in pass_rows:
        for name, p in r["passes"].items():
            print(
                f"| {r['reader']} | {r['corpus']} | {r['windows']} | {name} | {p['calls']} "
                f"| {p['calls_per_1k_chars']:.3f} | {p['prompt_chars_per_input_char']:.2f} "
                f"| {p['items']} |"
            )
    print("\n" + json.dumps({"checks": rows, "passes": pass_rows}))


if __name__ == "__main__":
    main()
