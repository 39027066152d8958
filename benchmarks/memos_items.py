"""What reading MemOS items costs: CPU microseconds per item for ``TextualMemoryItem.from_dict``
on memreader's own dicts (against plain ``model_validate``: the price of telling a MemOS dict
apart, paid by every store and batch read), on MemOS dicts, and for ``to_memos_dict()``.

Run by hand (results go to benchmarks/RESULTS.md with machine, CPU flags, load, command and
date)::

    .venv/bin/python benchmarks/memos_items.py [--items 20000] [--sources 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.items import TextualMemoryItem


def cpu_us(call: Callable[[], Any], items: int, rounds: int = 3) -> float:
    """Best of ``rounds``: CPU microseconds per call (process time: the machine is shared)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(items):
            call()
        best = min(best, time.process_time() - start)
    return best / items * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--sources", type=int, default=8)
    args = parser.parse_args()
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder={"backend": "hash"}))
    chat = [[{"role": "user", "content": f"I like tea number {i}."} for i in range(args.sources)]]
    item = reader.get_memory(chat, "chat", {"user_id": "u", "session_id": "s"})[0][0]
    ours = item.to_dict()
    memos = item.to_memos_dict()
    for source in memos["metadata"]["sources"]:  # as MemOS makes them: index, no span
        for key in ("scene_index", "message_index", "span"):
            source.pop(key, None)
    memos["metadata"].pop("internal_info")
    rows = [
        ("model_validate (memreader dict)", lambda: TextualMemoryItem.model_validate(ours)),
        ("from_dict (memreader dict)", lambda: TextualMemoryItem.from_dict(ours)),
        ("from_dict (MemOS dict)", lambda: TextualMemoryItem.from_dict(memos)),
        ("to_memos_dict()", item.to_memos_dict),
    ]
    print(f"| call | CPU µs/item ({args.sources} sources, best of 3 × {args.items}) |")
    print("|---|---:|")
    for name, call in rows:
        print(f"| {name} | {cpu_us(call, args.items):.1f} |")


if __name__ == "__main__":
    main()
