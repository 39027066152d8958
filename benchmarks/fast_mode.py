"""Fast-mode benchmark: end-to-end throughput against the embedder alone, windowing speed,
cold start and peak memory.

Run by hand (not in the test suite): ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/fast_mode.py``.
Each corpus is read in a fresh reader with a cold embedding cache; "embedder alone" embeds the
same window texts with a fresh embedder that shares the loaded model, so the ratio isolates what
memreader adds around the model. Results go to stdout as Markdown; paste them into RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = ROOT.parent / "shared" / "data" / "memorybank" / "memory_bank_en.json"
sys.path.insert(0, str(ROOT))


def cold_start() -> dict[str, float]:
    """Import + construct in a fresh interpreter, then the first embedding (model load)."""
    code = (
        "import time; t=time.perf_counter(); import memreader; "
        "r=memreader.SimpleStructMemReader(); t1=time.perf_counter(); "
        "r.get_memory([[{'role':'user','content':'hello'}]], "
        "info={'user_id':'u','session_id':'s'}); "
        "t2=time.perf_counter(); print(t1-t, t2-t1)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    construct, first = map(float, out.stdout.split())
    return {"import_construct_s": construct, "first_call_s": first}


def generated_corpus(messages: int, seed: int = 7) -> list[list[dict[str, str]]]:
    """About ``messages`` chat messages of ~250 characters in scenes of 20, reproducibly."""
    rng = random.Random(seed)
    words = [
        "tea",
        "piano",
        "park",
        "squirrel",
        "painting",
        "meeting",
        "flight",
        "Lisbon",
        "Shanghai",
        "doctor",
        "recipe",
        "garden",
        "budget",
        "novel",
        "concert",
        "weekend",
        "project",
        "deadline",
        "coffee",
        "train",
        "museum",
        "cherry",
        "blossom",
    ]
    scenes = []
    for s in range(messages // 20):
        scene = []
        for m in range(20):
            text = " ".join(rng.choice(words) for _ in range(40))[:250]
            scene.append(
                {
                    "role": "user" if m % 2 == 0 else "assistant",
                    "content": text,
                    "chat_time": f"2026-05-{1 + s % 28:02d}T10:{m:02d}:00",
                }
            )
        scenes.append(scene)
    return scenes


def memorybank_scenes() -> list[list[dict[str, str]]]:
    from memreader.datasets import load_memorybank

    return [scene for scenes in load_memorybank(MEMORYBANK).values() for scene in scenes]


def measure(name: str, scenes: list[list[dict[str, str]]], repeats: int) -> dict[str, Any]:
    from memreader import ReadReport, SimpleStructMemReader
    from memreader.embedders import build_embedder
    from memreader.parsers import scene_units
    from memreader.scene import normalize_chat

    messages = sum(len(s) for s in scenes)
    size = sum(len(m["content"].encode()) for s in scenes for m in s)
    info = {"user_id": "bench", "session_id": name}

    reader = SimpleStructMemReader()
    normalized = normalize_chat(scenes)
    units = [scene_units(s) for s in normalized]
    tokenizer = reader.runtime.windower.tokenizer
    lines = [u.prefix + u.text + "\n" for scene_units_ in units for u in scene_units_]
    window_s = tokenize_s = float("inf")
    for _ in range(repeats):  # interleaved, best of each: the machine's speed drifts
        t = time.perf_counter()
        windows = [reader.runtime.windower.windows(u) for u in units]
        window_s = min(window_s, time.perf_counter() - t)
        t = time.perf_counter()
        for line in lines:
            tokenizer.count(line)
        tokenize_s = min(tokenize_s, time.perf_counter() - t)
    texts = [w.text for ws in windows for w in ws]

    best_e2e = best_embed = float("inf")
    steps: dict[str, float] = {}
    for _ in range(repeats):
        fresh = SimpleStructMemReader()  # cold cache, shared model
        report = ReadReport()
        t = time.perf_counter()
        fresh.get_memory(scenes, type="chat", info=info, mode="fast", report=report)
        elapsed = time.perf_counter() - t
        if elapsed < best_e2e:
            best_e2e, steps = elapsed, dict(report.steps)
        embedder = build_embedder(fresh.config.embedder)
        t = time.perf_counter()
        embedder.embed(texts)
        best_embed = min(best_embed, time.perf_counter() - t)
    return {
        "corpus": name,
        "messages": messages,
        "MB": size / 1e6,
        "windows": len(texts),
        "e2e_s": best_e2e,
        "messages_per_s": messages / best_e2e,
        "windows_per_s": len(texts) / best_e2e,
        "embed_alone_s": best_embed,
        "ratio": best_embed / best_e2e,
        "windowing_MB_per_s": size / window_s / 1e6,
        "tiktoken_alone_MB_per_s": size / tokenize_s / 1e6,
        # Seconds in each pipeline step of the best end-to-end run: all but `embed` is what
        # memreader adds around the model.
        "steps_s": {name: round(seconds, 4) for name, seconds in steps.items()},
        "pipeline_share": 1 - steps.get("embed", 0.0) / best_e2e,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--generated", type=int, default=2000, help="messages in the generated corpus"
    )
    args = parser.parse_args()
    import psutil

    start = cold_start()
    rows = [
        measure("memorybank_en", memorybank_scenes(), args.repeats),
        measure(f"generated_{args.generated}", generated_corpus(args.generated), args.repeats),
    ]
    peak = psutil.Process().memory_info().rss / 2**20
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except ImportError:  # pragma: no cover - not on Linux
        pass
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"cold start: import + construct {start['import_construct_s']:.2f} s; "
        f"first call (loads the model) {start['first_call_s']:.2f} s; peak RSS {peak:.0f} MiB\n"
    )
    print(
        "| corpus | messages | MB | windows | e2e s | msg/s | windows/s "
        "| embedder alone s | ratio | windowing MB/s | tiktoken alone MB/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['corpus']} | {r['messages']} | {r['MB']:.3f} | {r['windows']} "
            f"| {r['e2e_s']:.2f} | "
            f"{r['messages_per_s']:.0f} | {r['windows_per_s']:.1f} | {r['embed_alone_s']:.2f} | "
            f"{r['ratio']:.3f} | {r['windowing_MB_per_s']:.1f} "
            f"| {r['tiktoken_alone_MB_per_s']:.1f} |"
        )
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
