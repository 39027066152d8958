"""What reading and asking real conversations costs (issue 40), through the public API only, so
that it runs on any checkout of memreader (before and after a change, each in its own
process): ingestion CPU and wall time per message (``Memory.add``, fast mode, the default
config), ``search`` (k=10) and ``context`` (1,000 tokens) p50/p95, and the store's bytes per
message.

It reads a LoCoMo-shaped file (``data/locomo10.json`` of github.com/snap-research/LoCoMo, not
shipped: CC BY-NC) as ``memreader eval`` does (speaker_a the user, the speakers' names on, a
shared photo's caption in brackets) and prints one JSON line::

    HF_HUB_OFFLINE=1 PYTHONPATH=<checkout> .venv/bin/python benchmarks/retrieval_cost.py \\
        LABEL locomo10.json --conversations conv-42,conv-43 --questions 100

Run the checkouts alternately, twice each, on a quiet machine, and compare within one run
(RESULTS.md, "2026-12-07: retrieval on real conversations").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def sessions(sample: dict[str, Any]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """A LoCoMo sample's sessions (``session_<n>``, in number order), as messages
    ``Memory.add`` takes."""
    talk = sample["conversation"]
    first = talk["speaker_a"]
    numbers = sorted(int(key[8:]) for key in talk if re.fullmatch(r"session_\d+", key))
    for n in numbers:
        when = talk.get(f"session_{n}_date_time")
        messages = []
        for turn in talk[f"session_{n}"]:
            caption = turn.get("blip_caption")
            messages.append(
                {
                    "role": "user" if turn["speaker"] == first else "assistant",
                    "name": turn["speaker"],
                    "content": turn["text"] + (f" [shares {caption}]" if caption else ""),
                    "chat_time": when,
                    "message_id": turn["dia_id"],
                }
            )
        yield n, messages


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(samples: Sequence[dict[str, Any]], questions: int) -> dict[str, Any]:
    """Read ``samples`` into a fresh store, then ask the first ``questions`` of each."""
    from memreader import Memory

    with tempfile.TemporaryDirectory() as folder:
        memory = Memory(store=f"sqlite:///{Path(folder) / 'm.db'}")
        memory.search("warm up", user_id="nobody")  # the model loads before the clock starts
        messages = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for sample in samples:
            owner = sample["sample_id"]
            for n, said in sessions(sample):
                memory.add(said, user_id=owner, session_id=f"{owner}/s{n}")
                messages += len(said)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        asked = [(s["sample_id"], q["question"]) for s in samples for q in s["qa"][:questions]]
        memory.search(asked[0][1], user_id=asked[0][0])
        memory.context(asked[0][1], user_id=asked[0][0], max_tokens=1000)
        search_ms, context_ms = [], []
        for owner, question in asked:
            started = time.perf_counter()
            memory.search(question, user_id=owner, k=10)
            search_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            memory.context(question, user_id=owner, max_tokens=1000)
            context_ms.append((time.perf_counter() - started) * 1000)
        memory.close()
        size = sum(p.stat().st_size for p in Path(folder).glob("m.db*"))
    return {
        "messages": messages,
        "ingest_cpu_ms_per_msg": round(cpu / messages * 1000, 2),
        "ingest_wall_ms_per_msg": round(wall / messages * 1000, 2),
        "questions": len(asked),
        "search_p50_ms": round(statistics.median(search_ms), 1),
        "search_p95_ms": round(percentile(search_ms, 0.95), 1),
        "context_p50_ms": round(statistics.median(context_ms), 1),
        "context_p95_ms": round(percentile(context_ms, 0.95), 1),
        "store_bytes_per_msg": round(size / messages),
        "load": round(os.getloadavg()[0], 2),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="what the checkout is (printed with the figures)")
    parser.add_argument("file", type=Path, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--conversations", default="conv-42,conv-43")
    parser.add_argument("--questions", type=int, default=100, help="asked per conversation")
    args = parser.parse_args(argv)
    wanted = set(args.conversations.split(","))
    samples = [s for s in json.loads(args.file.read_text("utf-8")) if s["sample_id"] in wanted]
    if not samples:
        raise SystemExit(f"no conversation of {args.file} is named {args.conversations}")
    row = {"label": args.label} | measure(samples, args.questions)
    print(json.dumps(row))
    return row


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
