"""Full-text search in Chinese (issue 30, part 3): recall and latency of ``search(mode="text")``
on MemoryBank's Chinese file, before and after memories were indexed by their terms.

Run by hand (not in the test suite), each side on its own code::

    git archive a088852 memreader | tar -x -C /tmp/mr-before   # the code before (main)
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cjk_search.py --code /tmp/mr-before
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cjk_search.py --fast

Options: ``--code DIR`` (the checkout whose ``memreader`` is measured; default this one),
``--backends sqlite,postgresql``, ``--words 150`` (queries per word length), ``--size 3000``
(memories of the latency owner), ``--queries 200`` (timed searches per kind), ``--fast``
(also read the file in fast mode with the default local embedder: real windows, hybrid /
vector / text), ``--json PATH``. Markdown goes to stdout, progress to stderr.

What it measures, every memory written through ``store.write`` and searched through
``store.search`` (k=5, its owner only; text-mode hits taken in the full-text list's order,
``score.text_rank``, so importance and decay do not reorder near-ties):

- **word**: 2-, 3- and 4-character pieces of the users' messages (random substrings of a run of
  Chinese characters, seeded), each kept only when exactly one of its owner's memories holds it
  (at most 3 for fast-mode windows, which overlap): a hit at ``k`` when a memory holding it is
  among the first ``k``. Chinese writes no spaces: such a piece is mostly a word or two inside
  a clause, what a person searches for.
- **first**: each day's first user message, whole (``day`` layout: its day must come back).
- **reply**: each user message, whole (``message`` layout): the assistant's reply to it must
  come back (the message itself left out): it shares words with the question, seldom a whole
  clause.
- Layouts: ``message`` (each message a memory, 1,132 in all, 15 owners), ``day`` (each day's
  messages joined, one memory per day, 150), ``fast`` (fast mode's windows, with ``--fast``).
- **latency**: ``--size`` memories of one owner (the file's messages, repeated with a marker
  so none is a duplicate; PostgreSQL then analyzed, as autovacuum would soon after), then
  ``--queries`` text searches (k=10) per kind (``word``: a
  2-4 character piece, ``sentence``: a first user message): p50/p95 after 5 warm-up ones.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CN = Path("/work/shared/data/memorybank/memory_bank_cn.json")
if not CN.exists():
    CN = ROOT / "data" / "memorybank" / "memory_bank_cn.json"
Scenes = list[list[dict[str, str]]]


def _log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _runs(text: str) -> list[str]:
    """The runs of Han characters of ``text`` (NFKC-folded)."""
    import unicodedata

    runs, run = [], ""
    for char in unicodedata.normalize("NFKC", text):
        if "\u4e00" <= char <= "\u9fff":
            run += char
        else:
            runs.append(run)
            run = ""
    return [r for r in [*runs, run] if r]


def _item(item_id: str, text: str, owner: str, scene: int = 0) -> Any:
    from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata

    source = SourceMessage(scene_index=scene, message_index=0, span=(0, len(text)), content=text)
    meta = TextualMemoryItemMetadata(user_id=owner, session_id="b", sources=[source])
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def layouts(users: dict[str, Scenes]) -> dict[str, dict[str, list[tuple[str, str, int]]]]:
    """``{layout: {owner: [(id, text, day)]}}`` for the ``message`` and ``day`` layouts."""
    out: dict[str, dict[str, list[tuple[str, str, int]]]] = {"message": {}, "day": {}}
    for owner, days in users.items():
        out["message"][owner] = [
            (f"{d}-{i}", m["content"], d) for d, day in enumerate(days) for i, m in enumerate(day)
        ]
        out["day"][owner] = [
            (f"{d}", "\n".join(m["content"] for m in day), d) for d, day in enumerate(days)
        ]
    return out


def sample_words(
    users: dict[str, Scenes],
    stored: dict[str, list[str]],
    per_length: int,
    max_holders: int,
    seed: int = 11,
) -> list[tuple[str, str]]:
    """``(owner, piece)`` queries: ``per_length`` pieces of 2, 3 and 4 characters of the users'
    messages, each held by 1 to ``max_holders`` of its owner's ``stored`` texts."""
    rng = random.Random(seed)
    owners = sorted(users)
    runs = {
        o: [r for day in users[o] for m in day if m["role"] == "user" for r in _runs(m["content"])]
        for o in owners
    }
    picked: list[tuple[str, str]] = []
    for length in (2, 3, 4):
        seen: set[tuple[str, str]] = set()
        for _ in range(per_length * 200):
            if len(seen) == per_length:
                break
            owner = rng.choice(owners)
            long_runs = [r for r in runs[owner] if len(r) >= length]
            if not long_runs:
                continue
            run = rng.choice(long_runs)
            start = rng.randrange(len(run) - length + 1)
            piece = run[start : start + length]
            holders = sum(piece in text for text in stored[owner])
            if 1 <= holders <= max_holders:
                seen.add((owner, piece))
        picked += sorted(seen)
    return picked


def word_recall(
    store: Any, words: list[tuple[str, str]], mode: str = "text"
) -> dict[str, dict[str, float]]:
    """Recall@1/@5 per piece length: a hit when a memory holding the piece is in the first k."""
    ranks: dict[int, list[int]] = {}
    for owner, piece in words:
        hits = store.search(piece, user_id=owner, k=5, mode=mode)
        hits = _text_order(hits) if mode == "text" else hits
        texts = [h.memory.item.memory for h in hits]
        rank = next((i for i, t in enumerate(texts, 1) if piece in t), 0)
        ranks.setdefault(len(piece), []).append(rank)
    return {f"{n} chars": _recall(r) for n, r in sorted(ranks.items())}


def first_recall(store: Any, users: dict[str, Scenes], mode: str = "text") -> dict[str, float]:
    """Each day's first user message: its day among the first 1 / 5 (by the cited scene)."""
    ranks = []
    for owner, days in users.items():
        for d, day in enumerate(days):
            query = next(m["content"] for m in day if m["role"] == "user")
            hits = store.search(query, user_id=owner, k=5, mode=mode)
            hits = _text_order(hits) if mode == "text" else hits
            days_of = [{s.scene_index for s in h.memory.item.metadata.sources} for h in hits]
            ranks.append(next((i for i, ds in enumerate(days_of, 1) if d in ds), 0))
    return _recall(ranks)


def reply_recall(store: Any, users: dict[str, Scenes]) -> dict[str, float]:
    """Each user message against its owner's messages (``message`` layout): the assistant's
    reply to it among the first 1 / 5, the message itself left out. The reply shares words
    with the question, rarely a whole clause between two commas."""
    ranks = []
    for owner, days in users.items():
        for d, day in enumerate(days):
            for i, message in enumerate(day[:-1]):
                if message["role"] != "user" or day[i + 1]["role"] != "assistant":
                    continue
                hits = store.search(message["content"], user_id=owner, k=6, mode="text")
                hits = _text_order(hits)
                ids = [h.memory.id for h in hits if h.memory.item.memory != message["content"]]
                ranks.append(next((r for r, x in enumerate(ids[:5], 1) if x == f"{d}-{i + 1}"), 0))
    return _recall(ranks)


def _text_order(hits: list[Any]) -> list[Any]:
    """Text-mode hits in the full-text list's own order (``score.text_rank``): what the
    tokenizer decides, before importance and decay reorder near-ties (fast mode's heuristic
    importance moves a score by up to 2.5%, more than the gap between adjacent ranks)."""
    return sorted(hits, key=lambda h: h.score.text_rank or 0)


def _recall(ranks: list[int]) -> dict[str, float]:
    return {
        "queries": len(ranks),
        "recall@1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
        "recall@5": round(sum(r > 0 for r in ranks) / len(ranks), 3),
    }


def _text_store(open_store: Any, url: str) -> Any:
    """A text-only store: ``text_only=True`` where open_store asks for it by name (since issue
    29), a plain open for the older code ``--code`` may point at."""
    import inspect

    if "text_only" in inspect.signature(open_store).parameters:
        return open_store(url, text_only=True)
    return open_store(url)


def recall(url: str, users: dict[str, Scenes], per_length: int) -> dict[str, Any]:
    """Word (and first-message) recall in the ``message`` and ``day`` layouts."""
    from memreader.stores import open_store

    out: dict[str, Any] = {}
    for name, owners in layouts(users).items():
        layout_url = url.replace("LAYOUT", name)
        with _text_store(open_store, layout_url) as store:
            for owner, rows in owners.items():
                store.write([_item(i, text, owner, scene=d) for i, text, d in rows])
            stored = {o: [t for _, t, _ in rows] for o, rows in owners.items()}
            words = sample_words(users, stored, per_length, max_holders=1)
            out[name] = {"memories": sum(len(r) for r in owners.values())}
            out[name]["word"] = word_recall(store, words)
            if name == "day":
                out[name]["first"] = first_recall(store, users)
            else:
                out[name]["reply"] = reply_recall(store, users)
        _log(f"{layout_url}: {json.dumps(out[name])}")
    return out


def fast_recall(folder: Path, users: dict[str, Scenes], per_length: int) -> dict[str, Any]:
    """Fast mode's windows (the default local embedder): first-message recall per search mode,
    word recall in text mode."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from store import _reader, ingest  # the store benchmark's fast-mode ingestion

    from memreader.stores import open_store

    path = folder / "fast.db"
    rows = ingest(list(users.items()), "sqlite", path)["rows"]
    reader = _reader(None)
    out: dict[str, Any] = {"memories": rows}
    with open_store(f"sqlite:///{path}", embedder=reader.runtime.embedder) as store:
        for mode in ("hybrid", "vector", "text"):
            out[f"first {mode}"] = first_recall(store, users, mode)
        stored = {o: _texts(path, o) for o in users}
        words = sample_words(users, stored, per_length, max_holders=3)
        out["word"] = word_recall(store, words)
        out["word hybrid"] = word_recall(store, words, mode="hybrid")
    reader.close()
    _log(f"fast: {json.dumps(out)}")
    return out


def _texts(path: Path, owner: str) -> list[str]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT memory FROM memories WHERE user_id = ?", (owner,))
        return [r[0] for r in rows]


def latency(url: str, users: dict[str, Scenes], size: int, queries: int) -> dict[str, Any]:
    """Text-search p50/p95 (ms) at ``size`` memories of one owner, per query kind."""
    from memreader.stores import open_store

    messages = [m["content"] for days in users.values() for day in days for m in day]
    texts = [f"{messages[i % len(messages)]} #{i // len(messages)}" for i in range(size)]
    rng = random.Random(5)
    firsts = [
        next(m["content"] for m in day if m["role"] == "user")
        for days in users.values()
        for day in days
    ]
    runs = [r for t in messages for r in _runs(t) if len(r) >= 4]
    pieces = []
    for _ in range(queries + 5):
        run, length = rng.choice(runs), rng.randint(2, 4)
        start = rng.randrange(len(run) - length + 1)
        pieces.append(run[start : start + length])
    out: dict[str, Any] = {"memories": size}
    with _text_store(open_store, url) as store:
        for start in range(0, size, 500):
            chunk = texts[start : start + 500]
            store.write([_item(f"m{start + i}", t, "bench") for i, t in enumerate(chunk)])
        if url.startswith("postgresql"):
            _analyze(url)
        for kind, asked in (("word", pieces), ("sentence", [rng.choice(firsts) for _ in pieces])):
            times = []
            for n, query in enumerate(asked):
                began = time.perf_counter()
                store.search(query, user_id="bench", k=10, mode="text")
                if n >= 5:
                    times.append((time.perf_counter() - began) * 1000)
            cuts = statistics.quantiles(times, n=20)
            out[kind] = {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(cuts[18], 2)}
    _log(f"latency {url}: {json.dumps(out)}")
    return out


def _analyze(url: str) -> None:
    """What autovacuum does soon after a bulk write: PostgreSQL's statistics of the table
    (without them the planner scans the owner's rows for each term instead of the GIN index,
    and the store counts each term's rows instead of estimating them)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memreader_memories")


def _pg_server(folder: Path) -> tuple[Any, str]:
    """A throwaway PostgreSQL server (``pgserver``, fsync off) with a database per layout and
    one for latency; the server, and its URL with ``LAYOUT`` where the database name goes."""
    import psycopg
    from pgserver.postgres_server import get_server

    server = get_server(str(folder / "pg"), cleanup_mode="delete")
    admin = str(server.get_uri())
    with psycopg.connect(admin, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
        for name in ("message", "day", "latency"):
            conn.execute(f"CREATE DATABASE cjk_{name}")
    return server, admin.replace("/postgres?", "/cjk_LAYOUT?")


def markdown(run: dict[str, Any]) -> str:
    lines = [f"code: `{run['code']}`; {run['machine']['cpu']}, load {run['load']}", ""]
    lines += [
        "| store | layout | query | queries | recall@1 | recall@5 |",
        "|---|---|---|---|---|---|",
    ]
    for backend, result in run["recall"].items():
        for layout, found in result.items():
            for name, row in [
                *found.get("word", {}).items(),
                *[(f"{n} hybrid", r) for n, r in found.get("word hybrid", {}).items()],
                *[(k, v) for k, v in found.items() if k.startswith(("first", "reply"))],
            ]:
                lines.append(
                    f"| {backend} | {layout} | {name} | {row['queries']} | "
                    f"{row['recall@1']} | {row['recall@5']} |"
                )
    lines += ["", "| store | memories | query | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    for backend, row in run["latency"].items():
        for kind in ("word", "sentence"):
            lines.append(
                f"| {backend} | {row['memories']} | {kind} | {row[kind]['p50_ms']} | "
                f"{row[kind]['p95_ms']} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=ROOT)
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--words", type=int, default=150)
    parser.add_argument("--size", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # The measured code first, imported now: later path changes (the store benchmark's, for
    # --fast) cannot swap it.
    sys.path.insert(0, str(args.code.resolve()))
    import memreader
    from memreader.scenes.memorybank import load_memorybank

    sys.path.insert(1, str(ROOT / "benchmarks"))
    from fast_mode import machine_info

    code = str(Path(memreader.__file__).resolve().parent.parent)
    _log(f"measuring the memreader of {code}")
    users = load_memorybank(CN)
    backends = [b for b in args.backends.split(",") if b]
    run: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "code": code,
        "command": " ".join(sys.argv),
        "machine": machine_info(),
        "load": Path("/proc/loadavg").read_text().split()[:3],
        "recall": {},
        "latency": {},
    }
    with tempfile.TemporaryDirectory(prefix="cjk-") as tmp:
        folder = Path(tmp)
        for backend in backends:
            server, url = (None, f"sqlite:///{folder}/LAYOUT.db")
            if backend == "postgresql":
                server, url = _pg_server(folder)
            try:
                run["recall"][backend] = recall(url, users, args.words)
                run["latency"][backend] = latency(
                    url.replace("LAYOUT", "latency"), users, args.size, args.queries
                )
            finally:
                if server is not None:
                    server.cleanup()
        if args.fast:
            run["recall"]["sqlite"]["fast"] = fast_recall(folder, users, args.words)
    run["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        args.json.write_text(json.dumps(run, indent=2, ensure_ascii=False), encoding="utf-8")
    sys.stdout.write(markdown(run) + "\n")


if __name__ == "__main__":
    main()
