"""What the embedding-model check costs a search (issue 29): ``n`` memories of one owner
(benchmarks/store.py's texts and latent vectors, bulk loaded, model ``bench``), then, on freshly
opened stores, the owner's first hybrid search (k=10) with an embedder named like the rows (the
check runs: one aggregate query over the owner's active rows) and with one without a name (no
check), the later searches of each (the check never runs again), and the aggregate query alone
(``store.embedding_models(user_id=...)``).

Run by hand (not in the test suite), on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store_models.py --size 20000 --opens 5

Options: ``--size`` (memories), ``--opens`` (fresh opens per variant), ``--skip pg`` or
``--skip sqlite``. Markdown goes to stdout (paste it into RESULTS.md), progress to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import os
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


class Unnamed:
    """:class:`FixedQuery` without a ``name``: the store has nothing to compare, no check."""

    def __init__(self) -> None:
        self.next = np.zeros(DIM, dtype=np.float32)

    def embed(self, texts: Any) -> list[list[float]]:
        return [self.next.tolist() for _ in texts]


def _ms(seconds: list[float]) -> float:
    return round(1000 * statistics.median(seconds), 2)


def measure(url: str, query: np.ndarray, opens: int) -> dict[str, float]:
    """Median ms of the first and of the later searches, named and unnamed, and of the
    aggregate query alone, over ``opens`` fresh opens each."""
    from memreader.stores import open_store

    times: dict[str, list[float]] = {}
    for _ in range(opens):
        for label, embedder in (("named", FixedQuery()), ("unnamed", Unnamed())):
            embedder.next = query
            with open_store(url, embedder=embedder) as store:
                for when in ("first", "later", "later"):
                    started = time.perf_counter()
                    store.search("river train", user_id="u", k=10)
                    times.setdefault(f"{label} {when}", []).append(time.perf_counter() - started)
        with open_store(url, text_only=True) as store:
            started = time.perf_counter()
            found = store.embedding_models(user_id="u")
            times.setdefault("embedding_models(user_id)", []).append(time.perf_counter() - started)
            assert set(found) == {"bench"}, found
    return {label: _ms(values) for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--skip", action="append", default=[], choices=("pg", "sqlite"))
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    texts = [t + " river train" for t in corpus_texts(args.size)]
    vecs = latent_vectors(rng, args.size)
    query = vecs[0]
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        if "sqlite" not in args.skip:
            path = os.path.join(folder, "m.db")
            load_sqlite(path, texts, vecs)
            rows["sqlite"] = measure("sqlite:///" + path, query, args.opens)
        if "pg" not in args.skip:
            from tests.pg_server import create_database, running_server

            with running_server() as admin:
                url = create_database(admin, "models")
                load_pg(url, texts, vecs)
                rows["postgresql"] = measure(url, query, args.opens)
    info = machine_info()
    command = "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store_models.py " + shlex.join(
        sys.argv[1:]
    )
    print(f"`{command}` on {datetime.date.today()}, {info['cpu']} ({info['cores']} cores), ")
    print(f"load average {os.getloadavg()[0]:.2f} at the end; {args.size} memories of one owner.\n")
    labels = list(next(iter(rows.values())))
    print("| store | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for store, values in rows.items():
        print(f"| {store} | " + " | ".join(f"{values[label]} ms" for label in labels) + " |")


if __name__ == "__main__":
    main()
