"""What ``maintain`` costs on a large store (issue 34): the delayed purge, the budgets and the
index repair over ``--memories`` memories (default 100,000) of ``--owners`` owners.

Run by hand (not in the test suite)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/maintain.py --json /tmp/maintain.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/maintain.py --pg   # PostgreSQL too (pgserver)
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/maintain.py --pg-only

The store is loaded by SQL (``INSERT`` in one transaction for SQLite, ``COPY`` for PostgreSQL,
as ``benchmarks/store.py`` loads its stores): each owner's memories are ``--expired`` expired
40 days ago (the purge takes them), ``--bare`` without a vector and ``--foreign`` with another
model's vector (the repair embeds them again: ``hash`` embedder, 16 dimensions, so the embedding
itself is cheap and the store's work shows), the rest active with the store's model; the
budget (``max_active``) puts every owner past its watermark. Then, through
``store.maintain``: a dry run, the run (each step timed: purge, budget, repair), and a second
run (nothing left to do: what a scheduled run costs when the store is in order). Times are wall
and CPU (``time.process_time``) seconds; on a loaded machine, trust the CPU column. Also the
cost of the budget check a write pays (one count of the owner's active rows): ``add_memory``
with and without a budget, CPU ms per write. Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import ROOT, machine_info

sys.path.insert(0, str(ROOT))

OLD = "2026-01-01T00:00:00.000000+00:00"
RECENT = "2026-11-20T00:00:00.000000+00:00"
DIM = 16
#: The store methods a run is timed by.
STEPS = ("purge", "enforce_budget", "_repair")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def plan(args: argparse.Namespace) -> Iterator[tuple[Any, ...]]:
    """One tuple per memory: owner, id, text, hash, status, retired_at, vector, model, item."""
    from memreader.stores.write_decisions import content_hash

    rng = random.Random(7)
    per_owner = args.memories // args.owners
    for o in range(args.owners):
        owner = f"owner{o}"
        for i in range(per_owner):
            text = f"{owner} fact {i}: the ferry {rng.randrange(10**6)} leaves pier {i % 97}"
            roll = rng.random()
            status, retired = ("expired", OLD) if roll < args.expired else ("active", None)
            vector: list[float] | None = [rng.gauss(0, 1) for _ in range(DIM)]
            model = "hash:16"
            if status == "active" and roll < args.expired + args.bare:
                vector, model = None, None
            elif status == "active" and roll < args.expired + args.bare + args.foreign:
                model = "other:model"
            meta = {"user_id": owner, "session_id": "s", "memory_type": "LongTermMemory"}
            item = json.dumps({"id": f"m{i}", "memory": text, "metadata": {**meta, "sources": []}})
            yield owner, f"m{i}", text, content_hash(text), status, retired, vector, model, item


def load_sqlite(path: str, args: argparse.Namespace) -> float:
    from memreader.retrieval.terms import index_text
    from memreader.stores import open_store
    from memreader.stores.sqlite.vectors import to_blob

    open_store("sqlite:///" + path, text_only=True).close()
    started = time.perf_counter()
    with sqlite3.connect(path) as conn:
        for rowid, row in enumerate(plan(args), 1):
            owner, mid, text, digest, status, retired, vector, model, item = row
            conn.execute(
                "INSERT INTO memories (rowid, id, user_id, session_id, memory_type, memory, "
                "content_hash, status, recorded_at, retired_at, embedding, embedding_model, "
                "supports, item) VALUES (?, ?, ?, 's', 'LongTermMemory', ?, ?, ?, ?, ?, ?, ?, "
                "'[]', ?)",
                (rowid, mid, owner, text, digest, status, RECENT, retired,
                 to_blob(vector) if vector else None, model, item),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO memories_terms (rowid, terms) VALUES (?, ?)", (rowid, index_text(text))
            )
    return time.perf_counter() - started


def load_pg(url: str, args: argparse.Namespace) -> float:
    import psycopg

    from memreader.stores import open_store

    open_store(url, dimension=DIM, text_only=True).close()
    started = time.perf_counter()
    columns = "id, user_id, session_id, memory_type, memory, content_hash, status, "
    columns += "recorded_at, retired_at, embedding, embedding_model, supports, item, fts"
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor().copy(f"COPY memreader_memories ({columns}) FROM STDIN") as copy:
            for owner, mid, text, digest, status, retired, vector, model, item in plan(args):
                vec = "[" + ",".join(f"{x:.6f}" for x in vector) + "]" if vector else None
                copy.write_row(
                    (mid, owner, "s", "LongTermMemory", text, digest, status, RECENT, retired,
                     vec, model, "[]", item, None)
                )  # fmt: skip
        # The terms of these ASCII texts are their words, lower-cased: what index_text gives.
        conn.execute("UPDATE memreader_memories SET fts = to_tsvector('simple', memory)")
        conn.execute("VACUUM ANALYZE memreader_memories")
    return time.perf_counter() - started


@contextmanager
def timed(into: dict[str, Any], key: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    into[key] = {
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def _wrap(store: Any, name: str, times: dict[str, Any]) -> None:
    original: Callable[..., Any] = getattr(store, name)

    def measured(*a: Any, **kw: Any) -> Any:
        if name in times:  # the first run's time only (the second run calls it again)
            return original(*a, **kw)
        with timed(times, name):
            return original(*a, **kw)

    setattr(store, name, measured)


def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    from memreader.stores import LifecycleConfig, open_store
    from memreader.testing import HashEmbedder

    lifecycle = LifecycleConfig(max_active=args.max_active, repair_batch=args.batch)
    out: dict[str, Any] = {}
    with open_store(url, embedder=HashEmbedder(), lifecycle=lifecycle) as store:
        with timed(out, "dry_run"):
            out["would"] = store.maintain(dry_run=True).totals()
        steps: dict[str, Any] = {}
        for name in STEPS:
            _wrap(store, name, steps)
        with timed(out, "run"):
            out["did"] = store.maintain().totals()
        out["steps"] = steps
        with timed(out, "second_run"):
            out["second"] = store.maintain().totals()
        out["write_check_ms"] = write_cost(store, args.writes)
    return out


def write_cost(store: Any, writes: int) -> dict[str, float]:
    """CPU ms per ``add_memory`` of one owner, with the budget (below its watermark after the
    run) and without."""
    kept = store.lifecycle
    found = {}
    for label, lifecycle in (("budget", kept), ("none", None)):
        store.lifecycle = lifecycle
        cpu = time.process_time()
        for i in range(writes):
            store.add_memory(f"{label} note {i} about the tide", user_id="owner0")
        found[label] = round(1000 * (time.process_time() - cpu) / writes, 2)
    store.lifecycle = kept
    return found


def markdown(result: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"`maintain` on {args.memories:,} memories of {args.owners} owners "
        f"(max_active {args.max_active:,}, repair_batch {args.batch}):",
        "",
        "| store | load s | dry run s (CPU) | run s (CPU) | purge s | budget s | repair s | "
        "second run s (CPU) | purged | expired | repaired | write CPU ms, budget / none |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in result["stores"].items():
        s = {step: r["steps"].get(step, {"wall_s": 0.0}) for step in STEPS}
        lines.append(
            f"| {name} | {r['load_s']:.1f} | {r['dry_run']['wall_s']} ({r['dry_run']['cpu_s']}) "
            f"| {r['run']['wall_s']} ({r['run']['cpu_s']}) | {s['purge']['wall_s']} | "
            f"{s['enforce_budget']['wall_s']} | {s['_repair']['wall_s']} | "
            f"{r['second_run']['wall_s']} ({r['second_run']['cpu_s']}) | {r['did']['purged']:,} "
            f"| {r['did']['expired']:,} | {r['did']['repaired']:,} | "
            f"{r['write_check_ms']['budget']} / {r['write_check_ms']['none']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=10)
    parser.add_argument("--expired", type=float, default=0.1)
    parser.add_argument("--bare", type=float, default=0.05)
    parser.add_argument("--foreign", type=float, default=0.05)
    parser.add_argument("--max-active", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL too (pgserver)")
    parser.add_argument("--pg-only", action="store_true", help="PostgreSQL only")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine_info(), "stores": {}}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "m.db")
        if not args.pg_only:
            _log("loading sqlite ...")
            load_s = load_sqlite(path, args)
            _log(f"loaded in {load_s:.1f}s; maintaining ...")
            result["stores"]["sqlite"] = {"load_s": load_s, **run("sqlite:///" + path, args)}
        if args.pg or args.pg_only:
            import psycopg
            from pgserver.postgres_server import get_server

            server = get_server(str(Path(folder) / "pg"), cleanup_mode="delete")
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM SET {setting} = off")
                conn.execute("SELECT pg_reload_conf()")
                conn.execute("CREATE DATABASE maintain")
            parts = urlsplit(server.get_uri())
            url = urlunsplit(parts._replace(path="/maintain"))
            _log("loading postgresql ...")
            load_s = load_pg(url, args)
            _log(f"loaded in {load_s:.1f}s; maintaining ...")
            result["stores"]["postgresql"] = {"load_s": load_s, **run(url, args)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(markdown(result, args))


if __name__ == "__main__":
    main()
