"""What one 500-item write costs as an owner's memories grow (issue 41, class 4): 2,500 /
50,000 / 200,000 memories of one owner, SQLite and PostgreSQL.

Run by hand (not in the test suite)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ingest_growth.py --json /tmp/growth.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ingest_growth.py --sizes 2500,50000 \\
        --backends sqlite --keep /tmp/growth      # the folder is kept, and reused next time

Options: ``--sizes`` (memories of the owner before each measured write), ``--backends``
(``sqlite,postgresql``), ``--rounds`` (warm writes per size, median), ``--keep DIR`` (keep the
stores there; a later run, say with another checkout on ``PYTHONPATH``, loads only what is
missing, so an older memreader is measured on the very same rows).

The owner's memories are loaded by SQL (one transaction of ``INSERT`` for SQLite; ``COPY``
then ``ANALYZE`` for PostgreSQL, what autovacuum would have done), with vectors of the
store's model (the ``hash`` test embedder, 16 dimensions: the embedder is not the cost here).
Then, through ``store.write`` on a store opened for the size:

- **first**: 500 new items (no vectors: the store embeds them) on the freshly opened store
  (SQLite then loads the owner's vectors once);
- **new**: 500 new items again, ``--rounds`` times (median): the steady cost of a write;
- **again**: the same 500 items written again (every one ``NONE``: the dedup path);
- **lookup**: ``store.lookup`` of 500 items, half of them stored;
- **work**: the database's work of one ``new`` write and one ``lookup``, counted as the tests
  count it (tests/stores/work_meter.py: SQLite VM instructions / 100, PostgreSQL index
  entries and rows read by the write's ``SELECT`` statements).

Wall and CPU seconds; on a loaded machine trust CPU and the work counts. Markdown to stdout,
progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import ROOT, machine_info

sys.path.insert(0, str(ROOT))

OWNER = "u1"
DIM = 16
MODEL = f"hash:{DIM}"
RECENT = "2026-11-20T00:00:00.000000+00:00"
BATCH = 500


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _text(i: int) -> str:
    return f"fact {i}: the ferry {i * 7919 % 1_000_003} leaves pier {i % 97} at {i % 24}h"


def rows(start: int, stop: int) -> Iterator[tuple[Any, ...]]:
    """One tuple per memory ``start`` to ``stop``: id, text, content hash, vector, item."""
    from memreader.stores.write_decisions import content_hash

    rng = random.Random(start)
    for i in range(start, stop):
        text = _text(i)
        vector = [rng.gauss(0, 1) for _ in range(DIM)]
        meta = {"user_id": OWNER, "session_id": "s", "memory_type": "LongTermMemory"}
        item = json.dumps({"id": f"m{i}", "memory": text, "metadata": {**meta, "sources": []}})
        yield f"m{i}", text, content_hash(text), vector, item


def load_sqlite(path: str, start: int, stop: int) -> None:
    from memreader.retrieval.terms import index_text
    from memreader.stores import open_store
    from memreader.stores.sqlite.vectors import to_blob

    open_store("sqlite:///" + path, text_only=True).close()
    with sqlite3.connect(path) as conn:
        for mid, text, digest, vector, item in rows(start, stop):
            cursor = conn.execute(
                "INSERT INTO memories (id, user_id, session_id, memory_type, memory, "
                "content_hash, status, recorded_at, embedding, embedding_model, supports, item) "
                "VALUES (?, ?, 's', 'LongTermMemory', ?, ?, 'active', ?, ?, ?, '[]', ?)",
                (mid, OWNER, text, digest, RECENT, to_blob(vector), MODEL, item),
            )
            conn.execute(
                "INSERT INTO memories_terms (rowid, terms) VALUES (?, ?)",
                (cursor.lastrowid, index_text(text)),
            )
        conn.execute("UPDATE owner_versions SET version = version + 1 WHERE user_id = ?", (OWNER,))


def load_pg(url: str, start: int, stop: int) -> None:
    import psycopg

    from memreader.stores import open_store
    from memreader.stores.postgres.schema import index_sql

    open_store(url, dimension=DIM, text_only=True).close()
    columns = "id, user_id, session_id, memory_type, memory, content_hash, status, "
    columns += "recorded_at, embedding, embedding_model, supports, item"
    with psycopg.connect(url, autocommit=True) as conn:
        # Rows copied into an HNSW index go in one by one (~8 ms each here): built afterwards
        # in one pass instead.
        conn.execute("DROP INDEX IF EXISTS memreader_memories_hnsw")
        with conn.cursor().copy(f"COPY memreader_memories ({columns}) FROM STDIN") as copy:
            for mid, text, digest, vector, item in rows(start, stop):
                vec = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
                copy.write_row(
                    (mid, OWNER, "s", "LongTermMemory", text, digest, "active", RECENT, vec,
                     MODEL, "[]", item)
                )  # fmt: skip
        conn.execute(
            "UPDATE memreader_memories SET fts = to_tsvector('simple', memory) WHERE fts IS NULL"
        )
        for statement in index_sql(DIM):
            conn.execute(statement)
        conn.execute("VACUUM ANALYZE memreader_memories")


def held(url: str) -> int:
    """How many memories of the owner the store holds (0 for a new one)."""
    from memreader.stores import open_store

    with open_store(url, text_only=True) as store:
        return sum(store.embedding_models(user_id=OWNER).values())


def items(start: int, count: int) -> list[Any]:
    from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata

    out = []
    for i in range(start, start + count):
        text = _text(i)
        source = SourceMessage(
            scene_index=0, message_index=i, span=(0, len(text)), content=text, message_id=f"x{i}"
        )
        meta = TextualMemoryItemMetadata(user_id=OWNER, session_id=f"w{i // 50}", sources=[source])
        out.append(TextualMemoryItem(id=f"m{i}", memory=text, metadata=meta))
    return out


@contextmanager
def timed(into: dict[str, Any], key: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    into[key] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def measure(url: str, size: int, rounds: int) -> dict[str, Any]:
    """The writes of one size (see the module docstring); new items are numbered from 10**8
    up, so they never meet the loaded ones."""
    import pytest

    from memreader.stores import open_store
    from memreader.testing import HashEmbedder
    from tests.stores.work_meter import database_work

    out: dict[str, Any] = {"size": size}
    fresh = 10**8 + size * 10
    embedder = HashEmbedder()
    with open_store(url, embedder=embedder) as store:
        with timed(out, "first"):
            store.write(items(fresh, BATCH))
        runs: list[dict[str, Any]] = []
        for r in range(rounds):
            one: dict[str, Any] = {}
            with timed(one, "t"):
                events = store.write(items(fresh + (r + 1) * BATCH, BATCH))
            # 16-dim hash vectors of different texts pass the near-duplicate cosine now and
            # then among thousands: such an item reinforces the stored one.
            assert {e.event for e in events} <= {"ADD", "REINFORCE"}, "a new item was lost"
            runs.append(one["t"])
            embedder.calls.clear()
        out["new"] = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s")}
        with timed(out, "again"):
            again = store.write(items(fresh, BATCH))
        assert all(e.event == "NONE" for e in again), "an item written twice changed something"
        half = items(fresh, BATCH // 2) + items(fresh + 10**6, BATCH // 2)
        with timed(out, "lookup"):
            store.lookup(half, user_id=OWNER)
        patch = pytest.MonkeyPatch()
        with database_work(store, patch) as write_work:
            store.write(items(fresh + (rounds + 1) * BATCH, BATCH))
        with database_work(store, patch) as lookup_work:
            store.lookup(half, user_id=OWNER)
        out["work"] = {"write": write_work.units, "lookup": lookup_work.units}
    return out


def run_backend(name: str, url: str, sizes: list[int], rounds: int) -> list[dict[str, Any]]:
    load = load_sqlite if name == "sqlite" else load_pg
    target = url.removeprefix("sqlite:///") if name == "sqlite" else url
    results = []
    for size in sizes:
        have = held(url)
        if have < size:
            _log(f"{name}: loading {have:,} -> {size:,} ...")
            started = time.perf_counter()
            load(target, have, size)
            _log(f"{name}: loaded in {time.perf_counter() - started:.0f}s")
        _log(f"{name}: measuring at {held(url):,} ...")
        found = measure(url, held(url), rounds)
        _log(f"{name}: {json.dumps(found)}")
        results.append(found)
    return results


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| store | memories | first write s (CPU) | write s (CPU), median | same 500 again s "
        "| lookup of 500 s | work: write / lookup |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, found in result["stores"].items():
        for r in found:
            lines.append(
                f"| {name} | {r['size']:,} | {r['first']['wall_s']:.2f} "
                f"({r['first']['cpu_s']:.2f}) | {r['new']['wall_s']:.2f} ({r['new']['cpu_s']:.2f}) "
                f"| {r['again']['wall_s']:.2f} | {r['lookup']['wall_s']:.3f} "
                f"| {r['work']['write']:,} / {r['work']['lookup']:,} |"
            )
    return "\n".join(lines)


@contextmanager
def postgres(folder: Path) -> Iterator[str]:
    """A throwaway server (fsync off) and the URL of its ``growth`` database."""
    import psycopg
    from pgserver.postgres_server import get_server

    server = get_server(str(folder / "pg"), cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'growth'").fetchone():
            conn.execute("CREATE DATABASE growth")
    try:
        yield urlunsplit(urlsplit(server.get_uri())._replace(path="/growth"))
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2500,50000,200000")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", help="keep the stores in this folder (reused when present)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    result: dict[str, Any] = {"machine": machine_info(), "stores": {}}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for name in args.backends.split(","):
            if name == "sqlite":
                url = f"sqlite:///{folder / 'growth.db'}"
                result["stores"][name] = run_backend(name, url, sizes, args.rounds)
            elif name == "postgresql":
                with postgres(folder) as url:
                    result["stores"][name] = run_backend(name, url, sizes, args.rounds)
            else:
                parser.error(f"unknown backend {name!r}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(markdown(result))


if __name__ == "__main__":
    main()
