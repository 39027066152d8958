"""Retrieval check on MemoryBank: does each day's first user message find its own window?

For every user of ``data/memorybank/memory_bank_en.json`` the chats are read in fast mode
(one reader, the embedder under test) and every window becomes an item with a vector. Each
day's first user message is then embedded alone and ranked against all windows of all users by
cosine similarity. A query is a hit at ``k`` when one of its ``k`` nearest windows holds that
very message (its sources cite it).

Two layouts: ``day`` reads each day as its own scene (mostly one window per day), ``user``
reads each user's whole history as one scene (many overlapping windows, so overlap sharing and
long-text pooling are exercised).

Run by hand: ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/retrieval.py``; tests call
:func:`memorybank_recall` too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = ROOT / "data" / "memorybank" / "memory_bank_en.json"
sys.path.insert(0, str(ROOT))


def memorybank_recall(
    embedder: dict[str, Any],
    *,
    layout: str = "day",
    embed_prefixes: bool = True,
    ks: tuple[int, ...] = (1, 5),
    path: Path = MEMORYBANK,
) -> dict[str, Any]:
    """Recall@k of the first user message of each day against all windows (see the module)."""
    import numpy as np

    from memreader import SimpleStructMemReader
    from memreader.readers.simple import SimpleStructMemReaderConfig
    from memreader.scenes.memorybank import load_memorybank

    users = load_memorybank(path)
    config = SimpleStructMemReaderConfig(embedder=embedder, embed_prefixes=embed_prefixes)
    reader = SimpleStructMemReader(config)
    vectors: list[list[float]] = []
    window_keys: list[set[tuple[str, int, int]]] = []
    queries: list[tuple[str, tuple[str, int, int]]] = []
    started = time.perf_counter()
    for user, days in users.items():
        scenes = days if layout == "day" else [[m for day in days for m in day]]
        offset = 0
        for d, day in enumerate(days):
            first = next(i for i, m in enumerate(day) if m["role"] == "user")
            key = (user, d, first) if layout == "day" else (user, 0, offset + first)
            queries.append((day[first]["content"], key))
            offset += len(day)
        items = reader.get_memory(scenes, type="chat", info={"user_id": user, "session_id": "b"})
        for scene_items in items:
            for item in scene_items:
                if item.metadata.embedding is None:
                    raise RuntimeError(f"an item of {user} has no vector")
                vectors.append(item.metadata.embedding)
                window_keys.append(
                    {(user, s.scene_index, s.message_index) for s in item.metadata.sources}
                )
    read_s = time.perf_counter() - started
    embedder_ = reader.runtime.embedder
    query_vectors = np.asarray(embedder_.embed([q for q, _ in queries]), dtype=np.float32)
    corpus = np.asarray(vectors, dtype=np.float32)
    scores = query_vectors @ corpus.T
    ranked = np.argsort(-scores, axis=1)
    result: dict[str, Any] = {
        "embedder": embedder_.name,
        "layout": layout,
        "prefixes": embed_prefixes,
        "queries": len(queries),
        "windows": len(vectors),
        "read_s": round(read_s, 2),
    }
    for k in ks:
        hits = sum(
            any(key in window_keys[j] for j in ranked[q, :k]) for q, (_, key) in enumerate(queries)
        )
        result[f"recall@{k}"] = round(hits / len(queries), 4)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="day,user")
    args = parser.parse_args()
    configs = [
        {"backend": "sentence_transformers"},
        {"backend": "local", "config": {"precision": "fp32"}},
        {"backend": "local", "config": {"precision": "int8"}},
        {"backend": "static"},
    ]
    for layout in args.layouts.split(","):
        for embedder in configs:
            for prefixes in (True, False):
                row = memorybank_recall(embedder, layout=layout, embed_prefixes=prefixes)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
