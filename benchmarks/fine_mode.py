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

The cost table (``cost``): fine mode with the defaults (extract, filter, rewrite; categories on)
on MemoryBank English and Chinese, prompt characters per input character per pass, with two
scripted extractors: ``all`` makes one memory of every message (the worst case for the filter
and the rewrite, which see the lines the memories cite) and ``user`` one memory of every user
message (an assistant's replies are seldom what a user's memory comes from).

The evidence check (``evidence``): a scripted model that reads only its prompt. The extraction
quotes each user message (and invents one memory per window, citing a real message); the filter
supports a memory only when its quote is in a message it was shown; the rewrite marks each
memory whose quote it was not shown. Counted: true memories kept, invented ones dropped, and
memories the rewrite lacked the evidence for.

``--sections`` picks what runs (default all); ``--days N`` bounds MemoryBank to N days per
language (default: all).
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
MEMORYBANK_CN = ROOT / "data" / "memorybank" / "memory_bank_cn.json"
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


#: A numbered line of a prompt: its number, role and text (after the time, when there is one).
LINE = re.compile(r"^\[(\d+)\] (\w+)(?: \([^)]*\))?: (?:\[[^\]]*\]: )?(.*)$", re.M)
#: Where a filter or rewrite prompt's memories begin (English or Chinese heading).
MEMORIES = re.compile(r"\n\n(?:Memories:|记忆：)\n")
INVENTED = "owns a yacht named Zephyr"
CHECKS = ("memory_filter", "memory_rewrite")


def quote_of(text: str) -> str:
    """What the evidence extractor quotes of a line: its first 24 characters."""
    return "quote: " + text[:24].strip()


#: The MemoryBank users' names (both languages), set in the server process by :func:`serve`.
USER_NAMES: list[str] = []


def naming_lines(prompt: str) -> list[int]:
    """The number of the first line that says a MemoryBank user's name ("Hello, Emily"), if
    one does: the message a memory that names the user takes the name from."""
    named = [int(n) for n, _, text in LINE.findall(prompt) if any(u in text for u in USER_NAMES)]
    return named[:1]


def evidence_answer(name: str, prompt: str, cite_names: bool = True) -> dict[str, Any]:
    """The reading model of the evidence check (see the module docstring); with
    ``cite_names`` the first memory also cites the lines that name the user, as the
    extraction prompt asks (a memory cites the messages that give its names)."""
    if name == "memory_extraction":
        lines = [(int(n), role, text) for n, role, text in LINE.findall(prompt)]
        users = [(n, text) for n, role, text in lines if role == "user" and text.strip()]
        memories = [
            {"key": "q", "memory_type": "UserMemory", "value": quote_of(text), "tags": []}
            | {"source_ids": [n]}
            for n, text in users
        ]
        if memories and cite_names:
            memories[0]["source_ids"] += naming_lines(prompt)
        if users:  # one invented memory per window, citing a real message
            memories.append(
                {"key": "x", "memory_type": "UserMemory", "value": f"quote: {INVENTED}"}
                | {"tags": [], "source_ids": [users[0][0]]}
            )
        return {"memory_list": memories, "summary": "a day"}
    parts = MEMORIES.split(prompt, maxsplit=1)
    shown, listed = (parts[0], parts[1]) if len(parts) == 2 else (prompt, "")
    memories = [(int(n), text) for n, text in re.findall(r"^\[(\d+)\] (.*)$", listed, re.M)]
    if name == "memory_filter":
        return {
            "results": [
                {"id": n, "supported": text.removeprefix("quote: ") in shown}
                for n, text in memories
            ]
        }
    return {  # the rewrite: marks what it could not find
        "results": [
            {"id": n, "value": text + " [evidence missing]"}
            for n, text in memories
            if text.removeprefix("quote: ") not in shown
        ]
    }


def responder(request: RecordedRequest) -> Reply:
    body = request.json or {}
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    prompt = body["messages"][-1]["content"]
    model = body.get("model")
    if model in ("evidence", "evidence-bare") and name in ("memory_extraction", *CHECKS):
        content = json.dumps(evidence_answer(name, prompt, cite_names=model == "evidence"))
    elif name == "memory_extraction":
        # model "bench-user": one memory per user message, the first also citing the lines
        # that name the user; otherwise one memory per message.
        pattern = r"^\[(\d+)\] user\b" if model == "bench-user" else r"^\[(\d+)\]"
        ids = [int(n) for n in re.findall(pattern, prompt, re.M)]
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
        if memories and model == "bench-user":
            memories[0]["source_ids"] += naming_lines(prompt)
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


def default_reader(url: str, model: str, concurrency: int) -> SimpleStructMemReader:
    """Fine mode with the defaults (extract, filter, rewrite; categories on), no embedding."""
    llm = {"backend": "openai", "model": model, "base_url": url, "timeout": 30}
    config = SimpleStructMemReaderConfig(embedder=None, llm=llm, llm_max_concurrency=concurrency)
    return SimpleStructMemReader(config)


def run_cost(
    url: str, scenes: list[Any], concurrency: int, corpus: str, cites: str
) -> dict[str, Any]:
    """Fine mode with the defaults: prompt characters per input character, per pass."""
    reader = default_reader(url, "bench-user" if cites == "user" else "bench", concurrency)
    counter = PassCounter()
    reader.hooks.before_call.append(counter)
    input_chars = sum(len(str(m.get("content") or "")) for scene in scenes for m in scene)
    info = {"user_id": "b", "session_id": "b"}
    result = reader.get_memory(scenes, type="chat", info=info, mode="fine")
    per_pass = {
        name: round(counter.chars.get(name, 0) / input_chars, 2)
        for name in ("extract", "filter", "rewrite")
    }
    return {
        "corpus": corpus,
        "cites": cites,
        "input_chars": input_chars,
        "calls": sum(counter.calls.values()),
        "items": sum(len(items) for items in result),
        "passes": per_pass,
        "total": round(sum(counter.chars.values()) / input_chars, 2),
    }


def run_evidence(
    url: str, scenes: list[Any], concurrency: int, corpus: str, names: list[str], model: str
) -> dict[str, Any]:
    """The evidence check (see the module docstring) with the defaults. ``names``: the
    MemoryBank users' names; counted, the windows whose extraction prompt holds one and those
    whose rewrite prompt does (a name only an uncited message says is not shown to the
    rewrite)."""
    reader = default_reader(url, model, concurrency)
    prompts: dict[str, list[str]] = {"extract": [], "rewrite": []}
    lock = threading.Lock()

    def keep(event: Any) -> None:
        with lock:
            prompts.setdefault(pass_of(event.messages), []).append(event.messages[-1]["content"])

    reader.hooks.before_call.append(keep)
    info = {"user_id": "b", "session_id": "b"}
    report = ReadReport()
    result = reader.get_memory(scenes, type="chat", info=info, mode="fine", report=report)
    answers = [
        evidence_answer("memory_extraction", prompt, model == "evidence")["memory_list"]
        for prompt in prompts["extract"]
    ]

    def naming(texts: list[str]) -> int:
        return sum(1 for text in texts if any(name in text for name in names))

    extracted = [m["value"] for memories in answers for m in memories]
    items = [item.memory for window_items in result for item in window_items]
    quoted = [text for text in items if text.startswith("quote: ")]
    return {
        "corpus": corpus,
        "model": "cites the naming lines" if model == "evidence" else "cites its own line only",
        "windows": len(report.windows),
        "true_extracted": sum(1 for text in extracted if INVENTED not in text),
        "true_kept": sum(1 for text in quoted if INVENTED not in text),
        "invented_extracted": sum(1 for text in extracted if INVENTED in text),
        "invented_kept": sum(1 for text in quoted if INVENTED in text),
        "rewrite_missing": sum(1 for text in quoted if text.endswith("[evidence missing]")),
        "extract_prompts_naming_user": naming(prompts["extract"]),
        "rewrite_prompts": len(prompts["rewrite"]),
        "rewrite_prompts_naming_user": naming(prompts["rewrite"]),
        "fallbacks": sum(1 for w in report.windows if w.status == "fallback"),
    }


def serve(latency: float, ports: Any) -> None:
    """The server process: the scripted server with ``responder``, until killed."""
    for path in (MEMORYBANK, MEMORYBANK_CN):
        USER_NAMES.extend(memorybank(path, None)[1])
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


SECTIONS = ("timing", "cost", "evidence", "passes")


def memorybank(path: Path, days: int | None) -> tuple[list[Any], list[str]]:
    """MemoryBank's days (each a scene), the first ``days`` of them when bounded; and the
    users' names."""
    by_user = load_memorybank(path)
    scenes = [scene for user_scenes in by_user.values() for scene in user_scenes]
    return (scenes[:days] if days else scenes), [name.strip() for name in by_user]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--agent-scenes", type=int, default=100, help="generated agent conversations"
    )
    parser.add_argument("--days", type=int, default=None, help="MemoryBank days per language")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="what to run")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if sections - set(SECTIONS):
        parser.error(f"--sections: choose from {', '.join(SECTIONS)}")
    scenes, names = memorybank(MEMORYBANK, args.days)
    scenes_zh, names_zh = memorybank(MEMORYBANK_CN, args.days)
    # The server runs in its own process so that it does not share this one's GIL.
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(args.latency, ports), daemon=True)
    server.start()
    rows: list[dict[str, Any]] = []
    pass_rows: list[dict[str, Any]] = []
    cost_rows: list[dict[str, Any]] = []
    evidence_rows: list[dict[str, Any]] = []
    corpora = (("memorybank en", scenes, names), ("memorybank zh", scenes_zh, names_zh))
    try:
        url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        if "timing" in sections:
            rows = [
                run(url, args.latency, scenes, args.concurrency, checks, use_async)
                for checks, use_async in (
                    (False, False),
                    (False, True),
                    (True, False),
                    (True, True),
                )
            ]
        if "cost" in sections:
            cost_rows = [
                run_cost(url, corpus_scenes, args.concurrency, corpus, cites)
                for corpus, corpus_scenes, _ in corpora
                for cites in ("all", "user")
            ]
        if "evidence" in sections:
            evidence_rows = [
                run_evidence(url, corpus_scenes, args.concurrency, corpus, corpus_names, model)
                for corpus, corpus_scenes, corpus_names in corpora
                for model in ("evidence", "evidence-bare")
            ]
        if "passes" in sections:
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
        f"{args.latency * 1000:.0f} ms per call, concurrency {args.concurrency}\n"
    )
    if rows:
        print_timing(rows)
    if cost_rows:
        print("\nFine mode with the defaults: prompt characters per input character\n")
        print(
            "| corpus | memories cite | input chars | calls | extract | filter | rewrite | total |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in cost_rows:
            p = r["passes"]
            print(
                f"| {r['corpus']} | {r['cites']} | {r['input_chars']} | {r['calls']} "
                f"| {p['extract']:.2f} | {p['filter']:.2f} | {p['rewrite']:.2f} "
                f"| {r['total']:.2f} |"
            )
    if evidence_rows:
        print("\nEvidence check (a scripted model that reads only its prompt)\n")
        print(
            "| corpus | extractor | windows | true memories kept | invented memories dropped "
            "| rewrite lacked the evidence | prompts naming the user: extract / rewrite "
            "| fallbacks |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in evidence_rows:
            dropped = r["invented_extracted"] - r["invented_kept"]
            print(
                f"| {r['corpus']} | {r['model']} | {r['windows']} "
                f"| {r['true_kept']} / {r['true_extracted']} "
                f"| {dropped} / {r['invented_extracted']} | {r['rewrite_missing']} "
                f"| {r['extract_prompts_naming_user']} / {r['rewrite_prompts_naming_user']} "
                f"(of {r['rewrite_prompts']}) | {r['fallbacks']} |"
            )
    if pass_rows:
        print_passes(pass_rows)
    print(
        "\n"
        + json.dumps(
            {"checks": rows, "cost": cost_rows, "evidence": evidence_rows, "passes": pass_rows}
        )
    )


def print_timing(rows: list[dict[str, Any]]) -> None:
    print(f"{rows[0]['input_chars']} input characters\n")
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


def print_passes(pass_rows: list[dict[str, Any]]) -> None:
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


if __name__ == "__main__":
    main()
