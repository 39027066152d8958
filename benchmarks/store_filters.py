"""Store search with a category filter and with common words (issue 27, classes 12 and 13):
``n`` memories of one owner (benchmarks/store.py's LoCoMo-style texts and latent vectors, bulk
loaded) and linked to three categories (all of them, every 10th, every 100th), and hybrid
searches (k=10) through ``store.search``: plain, with ``category=`` each of them, a
text-only query of the two words every memory holds (each text ends " river train"), and with
``task_id=`` (issue 34: the memories spread over ten tasks, every 5th one shared, so a task
sees its tenth and the shared fifth of the others).

Run by hand (not in the test suite), on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store_filters.py --size 50000 --queries 100

Options: ``--size`` (memories), ``--queries``, ``--skip pg`` or ``--skip sqlite``. Markdown goes to
stdout (paste it into RESULTS.md), progress to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import ROOT, machine_info
from store import DIM, FixedQuery, corpus_texts, latent_vectors, load_pg, load_sqlite

sys.path.insert(0, str(ROOT))


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


#: The categories of owner ``u``: every memory is in ``every``, every 10th in ``tenth``, every
#: 100th in ``hundredth``.
STEPS = {"every": 1, "tenth": 10, "hundredth": 100}


def link_categories(url: str, n: int) -> None:
    """Define :data:`STEPS`' categories for owner ``u`` and link the memories to them."""
    from memreader.stores import open_store
    from memreader.stores.category_types import CategoryDef

    with open_store(url, text_only=True) as store:
        defs = [CategoryDef(name=name, description=f"{name} memory") for name in STEPS]
        store.upsert_categories("u", defs)
        for start in range(0, n, 1000):
            links = {
                f"m{i}": [name for name, step in STEPS.items() if i % step == 0]
                for i in range(start, min(n, start + 1000))
            }
            store.link_categories("u", links)


def scope_tasks(url: str) -> None:
    """Spread owner ``u``'s memories over tasks ``t0``..``t9`` (by rowid), every 5th shared."""
    from memreader.stores import open_store

    open_store(url, text_only=True).close()  # the schema current (columns and indexes)
    statement = (
        "UPDATE memreader_memories SET task_id = 't' || (rowid % 10), "
        "visibility = CASE WHEN rowid % 5 = 0 THEN 'shared' ELSE 'private' END"
    )
    if url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(statement.replace("memreader_memories", "memories"))
            conn.execute("UPDATE owner_versions SET version = version + 1")
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement.replace("rowid % 10", "(rowid % 10)::text"))


def time_kinds(url: str, texts: list[str], vecs: np.ndarray, queries: int) -> dict[str, Any]:
    """p50/p95 (ms) of plain, category and common-word searches, after 5 warm-up queries."""
    from memreader.stores import open_store

    rng = np.random.default_rng(5)
    pick = random.Random(5)
    embedder = FixedQuery()
    asked = []
    for _ in range(queries + 5):
        q = vecs[rng.integers(0, len(vecs))] + 0.3 * rng.normal(size=DIM).astype(np.float32)
        text = texts[pick.randrange(len(texts))].split("\n")[0].split(": ", 1)[1]
        asked.append((q / np.linalg.norm(q), text))
    kinds: dict[str, dict[str, Any]] = {"plain": {}}
    kinds.update({f"category ({name})": {"category": name} for name in STEPS})
    kinds["common words"] = {"mode": "text"}
    kinds["task (a tenth, and the shared fifth)"] = {"task_id": "t1"}
    out: dict[str, Any] = {}
    with open_store(url, embedder=embedder) as store:
        for kind, options in kinds.items():
            found: list[float] = []
            hits_seen = 0
            for vector, text in asked:
                embedder.next = vector
                query = "river train" if kind == "common words" else text
                started = time.perf_counter()
                hits = store.search(query, user_id="u", k=10, **options)
                found.append((time.perf_counter() - started) * 1000)
                hits_seen += len(hits)
            out[kind] = {
                "p50_ms": round(statistics.median(found[5:]), 1),
                "p95_ms": round(sorted(found[5:])[int(0.95 * queries) - 1], 1),
                "mean_hits": round(hits_seen / len(asked), 1),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--skip", default="")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    texts = [f"{t} river train" for t in corpus_texts(args.size)]
    vecs = latent_vectors(np.random.default_rng(1), args.size)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        if "sqlite" not in skip:
            path = str(Path(folder) / "m.db")
            _log(f"sqlite: loading {args.size}")
            load_sqlite(path, texts, vecs)
            link_categories("sqlite:///" + path, args.size)
            scope_tasks("sqlite:///" + path)
            results["sqlite"] = time_kinds("sqlite:///" + path, texts, vecs, args.queries)
        if "pg" not in skip:
            sys.path.insert(0, str(ROOT / "tests"))
            from pg_server import create_database, running_server

            with running_server() as admin:
                url = create_database(admin, "filters")
                _log(f"postgresql: loading {args.size}")
                load_pg(url, texts, vecs)
                link_categories(url, args.size)
                scope_tasks(url)
                results["postgresql"] = time_kinds(url, texts, vecs, args.queries)
    info = machine_info()
    print(f"{datetime.date.today()}: `{shlex.join([sys.executable, *sys.argv])}`")
    print(f"machine: {info['cpu']}, {info['cores']} cores, load {os.getloadavg()[0]:.1f}")
    flags = sorted({f for f in Path("/proc/cpuinfo").read_text().split() if f.startswith("avx")})
    print(f"CPU flags: {' '.join(flags)}")
    print("\n| store | search | p50 ms | p95 ms | hits (of 10) |\n|---|---|---|---|---|")
    for store, kinds in results.items():
        for kind, row in kinds.items():
            print(f"| {store} | {kind} | {row['p50_ms']} | {row['p95_ms']} | {row['mean_hits']} |")


if __name__ == "__main__":
    main()
