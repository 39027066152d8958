"""Memory-store benchmark (issue 19): search latency at scale, hybrid against vector-only
retrieval, ingestion into a store against JSONL, and re-ingestion.

Run by hand (not in the test suite), on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store.py --json /tmp/store.json

Options: ``--sizes 10000,100000`` (memories of one owner), ``--queries 200``, ``--rounds 3``
(ingestion), ``--locomo-messages 2000``, ``--skip pg,minilm,retrieval,ingest`` (parts left
out), ``--sweep`` (the retrieval check for each importance_weight x gamma).
Markdown goes to stdout (paste it into RESULTS.md), progress to stderr.

What it measures:

- **Search at scale.** ``n`` memories of one owner (LoCoMo-style texts of two messages;
  vectors a 32-dim latent projected to 384 dims plus noise, or with ``minilm`` the local
  embedder's vectors of the same texts, at the smallest size) bulk-loaded (SQL inserts; COPY
  then an HNSW build), then ``--queries`` hybrid searches (k=10; a stored vector plus noise,
  another memory's first message as text) through ``store.search``: p50/p95 after 5 warm-up
  queries, and the first (cold) one. PostgreSQL (``pgserver`` on 127.0.0.1, fsync off) also
  gives recall@10 of its HNSW list against exact search. SQLite's vector search is exact.
- **Retrieval, hybrid against vector-only**: MemoryBank English read in fast mode (each day a
  scene, the default local embedder) and written into a SQLite store; each day's first user
  message searched (``k=5``, its owner) with ``mode="hybrid"``, ``"vector"`` and ``"text"``; a
  hit when a memory citing that day is among the first 1 / 5. ``cosine``: the owner's
  memories ranked by cosine alone. With ``--sweep``, hybrid and vector again for each
  ``importance_weight`` x ``gamma`` store option (the score's weights, see
  ``memreader/stores/scoring.py``)::

      HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store.py --sizes "" --skip ingest --sweep
- **Ingestion**: fast mode plus writing the items to JSONL (``model_dump_json`` lines) or
  into a fresh SQLite store (``store.write`` per call; the reader's ``store`` set, so its
  ``dedup`` step runs as in a store job), rounds interleaved, medians; MemoryBank and a
  LoCoMo-style corpus. Each run has a fresh reader (cold embedding cache), warmed up first.
- **Re-ingestion**: the same corpus again into the store it was written to, with a fresh
  reader: the ``dedup`` step finds the stored items, so they are not embedded; no new rows.

Targets (issue 19): SQLite search p95 <= 100 ms at 100k; PostgreSQL p95 <= 20 ms at 100k with
recall@10 >= 0.95; ingestion into SQLite <= 1.15x JSONL; re-ingestion >= 5x faster.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import shlex
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import MEMORYBANK, ROOT, locomo_corpus, machine_info

sys.path.insert(0, str(ROOT))

DIM = 384
Scenes = list[list[dict[str, Any]]]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class FixedQuery:
    """A query embedder that answers the vector it was given last."""

    name = "bench"

    def __init__(self) -> None:
        self.next = np.zeros(DIM, dtype=np.float32)

    def embed(self, texts: Any) -> list[list[float]]:
        return [self.next.tolist() for _ in texts]


def corpus_texts(n: int, seed: int = 3) -> list[str]:
    """``n`` memory texts: two consecutive LoCoMo-style messages each."""
    msgs = [m for scene in locomo_corpus(2 * n + 50, seed) for m in scene]
    return [
        f"{a['role']}: {a['content']}\n{b['role']}: {b['content']}"
        for a, b in zip(msgs[0 : 2 * n : 2], msgs[1 : 2 * n : 2], strict=True)
    ]


def latent_vectors(rng: np.random.Generator, n: int, latent: int = 32) -> np.ndarray:
    """Embedding-like unit vectors: a low-dimensional latent projected to 384 dims + noise."""
    projection = np.random.default_rng(11).normal(size=(latent, DIM)).astype(np.float32)
    v = rng.normal(size=(n, latent)).astype(np.float32) @ projection
    v += 0.5 * rng.normal(size=(n, DIM)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def _rows(texts: list[str], vecs: np.ndarray) -> Any:
    from memreader.stores.write_decisions import content_hash

    for i, text in enumerate(texts):
        meta = {"user_id": "u", "session_id": "s", "memory_type": "LongTermMemory"}
        item = {"id": f"m{i}", "memory": text, "metadata": {**meta, "sources": []}}
        yield i + 1, f"m{i}", text, content_hash(f"{i} {text}"), vecs[i], json.dumps(item)


def load_sqlite(path: str, texts: list[str], vecs: np.ndarray) -> float:
    from memreader.retrieval.terms import index_text
    from memreader.stores import open_store
    from memreader.stores.sqlite.vectors import to_blob

    open_store("sqlite:///" + path, text_only=True).close()
    started = time.perf_counter()
    with sqlite3.connect(path) as conn:
        for rowid, mid, text, digest, vec, item in _rows(texts, vecs):
            conn.execute(
                "INSERT INTO memories (rowid, id, user_id, session_id, memory_type, memory, "
                "content_hash, status, recorded_at, embedding, embedding_model, supports, item) "
                "VALUES (?, ?, 'u', 's', 'LongTermMemory', ?, ?, 'active', "
                "'2026-01-01T00:00:00.000000+00:00', ?, 'bench', '[]', ?)",
                (rowid, mid, text, digest, to_blob(vec), item),
            )
            conn.execute(
                "INSERT INTO memories_terms (rowid, terms) VALUES (?, ?)", (rowid, index_text(text))
            )
        conn.execute("INSERT INTO owner_versions VALUES ('u', 1)")
    return time.perf_counter() - started


def load_pg(url: str, texts: list[str], vecs: np.ndarray) -> tuple[float, float]:
    import psycopg

    from memreader.retrieval.terms import index_text
    from memreader.stores import open_store

    open_store(url, dimension=DIM, text_only=True).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX memreader_memories_hnsw")
        started = time.perf_counter()
        columns = "id, user_id, session_id, memory_type, memory, content_hash, status, "
        columns += "recorded_at, embedding, embedding_model, supports, item"
        with conn.cursor().copy(f"COPY memreader_memories ({columns}) FROM STDIN") as copy:
            for _, mid, text, digest, vec, item in _rows(texts, vecs):
                vector = "[" + ",".join(f"{x:.6f}" for x in vec) + "]"
                copy.write_row(
                    (mid, "u", "s", "LongTermMemory", text, digest, "active",
                     "2026-01-01T00:00:00+00", vector, "bench", "[]", item)
                )  # fmt: skip
        # The text index holds each memory's terms (written with the row by the store; COPY
        # cannot call index_text): filled from a side table, rowids being 1..n in COPY order.
        conn.execute("CREATE TEMP TABLE bench_terms (rowid bigint, terms text)")
        with conn.cursor().copy("COPY bench_terms FROM STDIN") as copy:
            for rowid, _, text, _, _, _ in _rows(texts, vecs):
                copy.write_row((rowid, index_text(text)))
        conn.execute(
            "UPDATE memreader_memories m SET fts = to_tsvector('simple', t.terms) "
            "FROM bench_terms t WHERE m.rowid = t.rowid"
        )
        load_s = time.perf_counter() - started
        conn.execute("SET maintenance_work_mem = '2GB'")
        started = time.perf_counter()
        conn.execute(
            "CREATE INDEX memreader_memories_hnsw ON memreader_memories "
            "USING hnsw (embedding vector_cosine_ops)"
        )
        index_s = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE memreader_memories")
    return load_s, index_s


def time_searches(url: str, texts: list[str], vecs: np.ndarray, queries: int) -> dict[str, Any]:
    """p50/p95 of hybrid searches (k=10), of the same searches vector-only, and the first
    one's time; the query vectors."""
    from memreader.stores import open_store

    rng = np.random.default_rng(5)
    pick = random.Random(5)
    embedder = FixedQuery()
    asked: list[tuple[np.ndarray, str]] = []
    for _ in range(queries + 5):
        q = vecs[rng.integers(0, len(vecs))] + 0.3 * rng.normal(size=DIM).astype(np.float32)
        text = texts[pick.randrange(len(texts))].split("\n")[0].split(": ", 1)[1]
        asked.append((q / np.linalg.norm(q), text))
    latencies: dict[str, list[float]] = {"hybrid": [], "vector": []}
    with open_store(url, embedder=embedder) as store:
        for mode, found in latencies.items():
            for vector, text in asked:
                embedder.next = vector
                started = time.perf_counter()
                hits = store.search(text, user_id="u", k=10, mode=mode)  # type: ignore[arg-type]
                found.append((time.perf_counter() - started) * 1000)
                assert len(hits) == 10
    out: dict[str, Any] = {"first_ms": round(latencies["hybrid"][0], 1)}
    for mode, found in latencies.items():
        name = "" if mode == "hybrid" else "vector_"
        out[f"{name}p50_ms"] = round(statistics.median(found[5:]), 1)
        out[f"{name}p95_ms"] = round(sorted(found[5:])[int(0.95 * queries) - 1], 1)
    out["_asked"] = [vector for vector, _ in asked]
    return out


def pg_recall(url: str, asked: list[np.ndarray]) -> float:
    """Recall@10 of the HNSW list (the ef_search the store sets for k=10) vs exact."""
    import psycopg

    from memreader.stores.postgres.operations import MIN_EF_SEARCH

    hit = 0
    sql = "SELECT rowid FROM memreader_memories m WHERE m.user_id = 'u' AND m.status = 'active' "
    with psycopg.connect(url, autocommit=True) as conn:
        for q in asked[:200]:
            text = "[" + ",".join(f"{x:.6f}" for x in q) + "]"
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.ef_search = {MIN_EF_SEARCH}")
                approx = conn.execute(sql + "ORDER BY m.embedding <=> %s::vector LIMIT 10", (text,))
                found = {r[0] for r in approx}
            exact = conn.execute(
                sql + "ORDER BY (m.embedding <=> %s::vector) + 0 LIMIT 10", (text,)
            )
            hit += len(found & {r[0] for r in exact})
    return round(hit / (10 * min(200, len(asked))), 4)


def minilm_vectors(texts: list[str]) -> np.ndarray:
    from memreader.embedders import build_embedder

    embedder = build_embedder({"backend": "local"})
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    unit: np.ndarray = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return unit


def search_scale(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    """Search latency (and HNSW recall) per store, size and kind of vectors."""
    admin = None
    if "pg" not in args.skip:
        import psycopg
        from pgserver.postgres_server import get_server

        server = get_server(str(folder / "pg"), cleanup_mode="delete")
        admin = server.get_uri()
        with psycopg.connect(admin, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
    runs = [(n, "latent") for n in args.sizes]
    if "minilm" not in args.skip:
        runs.append((min(args.sizes), "minilm"))
    results = []
    for n, kind in runs:
        texts = corpus_texts(n)
        _log(f"search: {n} memories, {kind} vectors ...")
        vecs = latent_vectors(np.random.default_rng(0), n) if kind == "latent" else None
        vecs = minilm_vectors(texts) if vecs is None else vecs
        path = str(folder / f"s{n}{kind}.db")
        load_s = load_sqlite(path, texts, vecs)
        row = time_searches("sqlite:///" + path, texts, vecs, args.queries)
        results.append({"store": "sqlite", "n": n, "vectors": kind, "load_s": round(load_s, 1)})
        results[-1].update({k: v for k, v in row.items() if not k.startswith("_")})
        _log(json.dumps(results[-1]))
        if admin is None:
            continue
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE b{n}{kind}")
        url = admin.replace("/postgres?", f"/b{n}{kind}?")
        load_s, index_s = load_pg(url, texts, vecs)
        row = time_searches(url, texts, vecs, args.queries)
        results.append({"store": "postgresql", "n": n, "vectors": kind, "load_s": round(load_s, 1)})
        results[-1].update({k: v for k, v in row.items() if not k.startswith("_")})
        results[-1].update(
            hnsw_build_s=round(index_s, 1), recall_at_10=pg_recall(url, row["_asked"])
        )
        _log(json.dumps(results[-1]))
    return results


def corpora(args: argparse.Namespace) -> dict[str, list[tuple[str, Scenes]]]:
    """Corpora for ingestion: (owner, scenes) per call."""
    from memreader.scenes.memorybank import load_memorybank

    found = {"locomo": [("bench", locomo_corpus(args.locomo_messages, 7))]}
    if MEMORYBANK.exists():
        found["memorybank"] = list(load_memorybank(MEMORYBANK).items())
    return found


def _reader(store_url: str | None) -> Any:
    """A fresh reader (cold embedding cache), its model loaded and warmed up."""
    from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig

    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(store=store_url))
    warm = [[{"role": "user", "content": "A warm-up line, not in any corpus."}]]
    reader.get_memory(warm, type="chat", mode="fast", info={"user_id": "w", "session_id": "w"})
    return reader


def ingest(corpus: list[tuple[str, Scenes]], sink: str, target: Path) -> dict[str, Any]:
    """Read ``corpus`` in fast mode and write each call's items to ``sink`` (``jsonl`` or
    ``sqlite``) at ``target``; wall seconds from the first read to the last write, and the
    seconds spent writing (``sink_s``)."""
    from memreader.stores import open_store

    url = f"sqlite:///{target}" if sink == "sqlite" else None
    reader = _reader(url)
    events: dict[str, int] = {}
    sink_s = 0.0
    started = time.perf_counter()
    if url is None:
        with target.open("w", encoding="utf-8") as out:
            for owner, scenes in corpus:
                info = {"user_id": owner, "session_id": f"bench:{owner}"}
                result = reader.get_memory(scenes, type="chat", mode="fast", info=info)
                begun = time.perf_counter()
                for items in result:
                    out.writelines(item.model_dump_json() + "\n" for item in items)
                out.flush()
                sink_s += time.perf_counter() - begun
    else:
        with open_store(url, text_only=True) as store:
            for owner, scenes in corpus:
                info = {"user_id": owner, "session_id": f"bench:{owner}"}
                result = reader.get_memory(scenes, type="chat", mode="fast", info=info)
                begun = time.perf_counter()
                for event in store.write([item for items in result for item in items]):
                    events[event.event] = events.get(event.event, 0) + 1
                sink_s += time.perf_counter() - begun
    wall = time.perf_counter() - started
    reader.close()
    if url is None:
        return {"wall_s": round(wall, 2), "sink_s": round(sink_s, 3)}
    with sqlite3.connect(target) as conn:
        rows = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    return {"wall_s": round(wall, 2), "sink_s": round(sink_s, 3), "events": events, "rows": rows}


def ingestion(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """JSONL vs SQLite first ingestion, interleaved rounds; then re-ingestion."""
    out: dict[str, Any] = {}
    for name, corpus in corpora(args).items():
        runs: dict[str, list[dict[str, Any]]] = {"jsonl": [], "sqlite": [], "again": []}
        for r in range(args.rounds):
            for sink in ("jsonl", "sqlite") if r % 2 == 0 else ("sqlite", "jsonl"):
                target = folder / f"{name}-{r}.{'db' if sink == 'sqlite' else 'jsonl'}"
                runs[sink].append(ingest(corpus, sink, target))
                _log(f"ingest {name} round {r + 1} {sink}: {runs[sink][-1]}")
            runs["again"].append(ingest(corpus, "sqlite", folder / f"{name}-{r}.db"))
            _log(f"ingest {name} round {r + 1} again: {runs['again'][-1]}")
        median = {k: statistics.median(x["wall_s"] for x in v) for k, v in runs.items()}
        writing = {k: statistics.median(x["sink_s"] for x in v) for k, v in runs.items()}
        out[name] = {
            "messages": sum(len(s) for _, scenes in corpus for s in scenes),
            "median_wall_s": median,
            "median_sink_s": writing,
            "sqlite_over_jsonl": round(median["sqlite"] / median["jsonl"], 3),
            "first_over_again": round(median["sqlite"] / median["again"], 2),
            "runs": runs,
        }
    return out


def _day_ranks(store: Any, users: dict[str, Scenes], mode: str) -> list[int]:
    """Per day, the rank (1-5, 0: not found) of the first memory citing that day when the
    day's first user message is searched in its owner's memories (``cosine``: every memory
    of the owner ranked by cosine alone, not by the store's score)."""
    ranks = []
    for user, days in users.items():
        for d, day in enumerate(days):
            query = next(m["content"] for m in day if m["role"] == "user")
            if mode == "cosine":
                hits = store.search(query, user_id=user, k=1000, mode="vector")
                hits = sorted(hits, key=lambda h: -(h.score.similarity or 0.0))[:5]
            else:
                hits = store.search(query, user_id=user, k=5, mode=mode)
            days_of = [{s.scene_index for s in h.memory.item.metadata.sources} for h in hits]
            ranks.append(next((i for i, ds in enumerate(days_of, 1) if d in ds), 0))
    return ranks


#: The weights ``--sweep`` tries: importance_weight x gamma.
SWEEP_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.5)
SWEEP_GAMMAS = (1.0, 0.999, 0.995, 0.99)


def _recall(ranks: list[int], memories: int) -> dict[str, Any]:
    return {
        "queries": len(ranks),
        "memories": memories,
        "recall@1": round(sum(r == 1 for r in ranks) / len(ranks), 4),
        "recall@5": round(sum(r > 0 for r in ranks) / len(ranks), 4),
    }


def retrieval(folder: Path, sweep: bool) -> dict[str, Any]:
    """Each MemoryBank day's first user message against its owner's memories: recall@1/@5
    per search mode with the store's default weights (and the stored importance: fast mode's
    heuristic); with ``sweep``, hybrid and vector search for every importance_weight x gamma
    of :data:`SWEEP_WEIGHTS` x :data:`SWEEP_GAMMAS`."""
    from memreader.scenes.memorybank import load_memorybank
    from memreader.stores import open_store

    users = load_memorybank(MEMORYBANK)
    path = folder / "retrieval.db"
    memories = ingest(list(users.items()), "sqlite", path)["rows"]
    reader = _reader(None)
    url = f"sqlite:///{path}"
    out: dict[str, Any] = {"modes": {}, "sweep": []}
    with open_store(url, embedder=reader.runtime.embedder) as store:
        for mode in ("hybrid", "vector", "text", "cosine"):
            out["modes"][mode] = _recall(_day_ranks(store, users, mode), memories)
    for weight in SWEEP_WEIGHTS if sweep else ():
        for gamma in SWEEP_GAMMAS:
            options = {"importance_weight": weight, "gamma": gamma}
            row: dict[str, Any] = dict(options)
            with open_store(url, embedder=reader.runtime.embedder, **options) as store:
                for mode in ("hybrid", "vector"):
                    found = _recall(_day_ranks(store, users, mode), memories)
                    row[f"{mode} recall@1"] = found["recall@1"]
                    row[f"{mode} recall@5"] = found["recall@5"]
            out["sweep"].append(row)
            _log(json.dumps(row))
    reader.close()
    return out


def _table(head: str, rows: list[list[Any]]) -> list[str]:
    cells = head.split("|")
    lines = ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] + [""]


def markdown(run: dict[str, Any]) -> str:
    search = [
        [r["store"], f"{r['n']:,}", r["vectors"], r["first_ms"], r["p50_ms"], r["p95_ms"],
         r["vector_p50_ms"], r["vector_p95_ms"], r.get("recall_at_10", "exact")]
        for r in run.get("search", [])
    ]  # fmt: skip
    head = "store|memories|vectors|first search ms|p50 ms|p95 ms|vector-only p50|p95|recall@10"
    lines = _table(head, search)
    modes = [[m, *r.values()] for m, r in run["retrieval"].get("modes", {}).items()]
    lines += _table("mode|queries|memories|recall@1|recall@5", modes) if modes else []
    swept = [list(r.values()) for r in run["retrieval"].get("sweep", [])]
    head = "importance_weight|gamma|hybrid recall@1|hybrid recall@5|vector recall@1|vector recall@5"
    lines += _table(head, swept) if swept else []
    ingested = [
        [name, r["messages"], r["median_wall_s"]["jsonl"], r["median_wall_s"]["sqlite"],
         r["sqlite_over_jsonl"], r["median_sink_s"]["jsonl"], r["median_sink_s"]["sqlite"],
         r["median_wall_s"]["again"], r["first_over_again"]]
        for name, r in run.get("ingestion", {}).items()
    ]  # fmt: skip
    head = "corpus|messages|JSONL s|SQLite s|SQLite/JSONL|writing JSONL s|writing SQLite s"
    head += "|again s|first/again"
    return "\n".join(lines + (_table(head, ingested) if ingested else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--locomo-messages", type=int, default=2000)
    parser.add_argument("--skip", default="")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    args.skip = {x for x in args.skip.split(",") if x}
    run: dict[str, Any] = {
        "command": shlex.join(["HF_HUB_OFFLINE=1", sys.executable, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "retrieval": {},
    }
    with tempfile.TemporaryDirectory(prefix="mr-store-bench-") as tmp:
        folder = Path(tmp)
        if args.sizes:
            run["search"] = search_scale(args, folder)
        if "retrieval" not in args.skip and MEMORYBANK.exists():
            run["retrieval"] = retrieval(folder, args.sweep)
            _log(json.dumps(run["retrieval"]))
        if "ingest" not in args.skip:
            run["ingestion"] = ingestion(args, folder)
    if args.json:
        args.json.write_text(json.dumps(run, indent=1, default=str))
    print(json.dumps(run["machine"]))
    print(markdown(run))


if __name__ == "__main__":
    main()
