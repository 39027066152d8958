"""What an erasure leaves in the files, measured (issue 41): how many copies of an erased
memory's words are still in the bytes of the store, at each step an operator could take.

For each backend a store gets ``--memories`` memories (one commit each, so SQLite's text index
has many segments), one of them holding a unique word; that memory is updated (its successor
inherits its source), given a category summary, then erased with ``delete(erase=True)``.
The word (as written and case-folded) is then counted in:

- SQLite: the database file and its WAL, right after the erase and after ``close()``;
- PostgreSQL (pgserver, tests/pg_server.py): the data folder's table files (``base/``) and
  the write-ahead log (``pg_wal/``) after ``CHECKPOINT``, then after ``VACUUM`` of memreader's
  tables, then after ``VACUUM FULL``.

It also times the erase itself on SQLite for a few store sizes (FTS5 ``optimize`` rewrites the
whole text index, so the erase grows with the index).

Run: ``python benchmarks/erase_residue.py [--memories 200] [--sizes 1000,5000]``.
"""

from __future__ import annotations

import argparse
import glob
import os
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import CategoryDef, MemoryStore, open_store
from memreader.testing import HashEmbedder

WORD = "Zanzibarquux"


def _item(item_id: str, text: str) -> TextualMemoryItem:
    source = SourceMessage(scene_index=0, message_index=0, span=(0, len(text)), content=text)
    meta = TextualMemoryItemMetadata(user_id="u1", session_id="s1", sources=[source])
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def _fill(store: MemoryStore, memories: int) -> None:
    for n in range(memories):
        store.write([_item(f"k{n}", f"Keepsake note {n} about the garden and the sea.")])
    store.write([_item("secret", f"My bank PIN hint is {WORD} Overture.")])
    store.upsert_categories("u1", [CategoryDef(name="other", description="Anything.")])
    store.link_categories("u1", {"secret": ["other"]})
    store.save_summary(
        "u1", "other", summary=f"- My bank PIN hint is {WORD} [ref:secret]", kind="llm", note=None
    )
    store.update("secret", "My bank PIN hint changed.", user_id="u1")


def _count(paths: list[str]) -> tuple[int, int]:
    raw = folded = 0
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        raw += data.count(WORD.encode())
        folded += data.count(WORD.lower().encode())
    return raw, folded


def _files(folder: str, *subfolders: str) -> list[str]:
    found: list[str] = []
    for sub in subfolders:
        for root, _, names in os.walk(os.path.join(folder, sub)):
            found += [os.path.join(root, name) for name in names]
    return found


def sqlite_residue(memories: int) -> list[tuple[str, tuple[int, int]]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/m.db"
        store = open_store(f"sqlite:///{path}", embedder=HashEmbedder())
        _fill(store, memories)
        rows.append(("before the erase", _count(glob.glob(path + "*"))))
        store.delete("secret", user_id="u1", erase=True)
        rows.append(("after the erase (store open)", _count(glob.glob(path + "*"))))
        store.close()
        rows.append(("after close()", _count(glob.glob(path + "*"))))
    return rows


def postgres_residue(memories: int) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    import psycopg

    from tests.pg_server import create_database, running_server

    rows = []
    with running_server() as admin:
        folder = admin.split("host=")[1].split("&")[0]
        url = create_database(admin, "residue")
        store = open_store(url, embedder=HashEmbedder())
        _fill(store, memories)

        def measure(step: str, *sql: str) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                for statement in sql:
                    conn.execute(statement)
                conn.execute("CHECKPOINT")
            rows.append((step, _count(_files(folder, "base")), _count(_files(folder, "pg_wal"))))

        measure("before the erase")
        store.delete("secret", user_id="u1", erase=True)
        store.close()
        measure("after the erase")
        tables = (
            "memreader_memories, memreader_history, memreader_categories, memreader_keys, "
            "memreader_passages"
        )
        measure("after VACUUM", f"VACUUM {tables}")
        measure("after VACUUM FULL", f"VACUUM FULL {tables}")
    return rows


def sqlite_erase_cost(size: int) -> tuple[float, int]:
    """Milliseconds of one ``delete(erase=True)`` in a SQLite store of ``size`` memories, and
    the bytes of the text index it rewrote (what ``optimize`` costs, free of the load)."""
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/m.db"
        with open_store(f"sqlite:///{path}", embedder=HashEmbedder()) as store:
            batch = 500
            for start in range(0, size, batch):
                store.write(
                    [
                        _item(f"k{n}", f"Keepsake note {n} about the garden, word{n % 977}.")
                        for n in range(start, min(size, start + batch))
                    ]
                )
            began = time.perf_counter()
            store.delete("k0", user_id="u1", erase=True)
            took = (time.perf_counter() - began) * 1000
        with closing(sqlite3.connect(path)) as conn:
            (index_bytes,) = conn.execute(
                "SELECT sum(length(block)) FROM memories_terms_data"
            ).fetchone()
        return took, int(index_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(f"SQLite ({args.memories} other memories): copies of the word (as written, folded)")
    for step, (raw, folded) in sqlite_residue(args.memories):
        print(f"  {step:<32} file+WAL: {raw} / {folded}")
    if not args.no_postgres:
        print(f"PostgreSQL ({args.memories} other memories): base/ and pg_wal/ (written, folded)")
        for step, (raw, folded), (wal_raw, wal_folded) in postgres_residue(args.memories):
            print(f"  {step:<20} base: {raw} / {folded}   pg_wal: {wal_raw} / {wal_folded}")
    print("SQLite erase cost (FTS5 optimize rewrites the index):")
    for size in (int(s) for s in args.sizes.split(",")):
        took, index_bytes = sqlite_erase_cost(size)
        print(f"  {size:>7} memories: {took:8.1f} ms, text index rewritten {index_bytes:,} bytes")


if __name__ == "__main__":
    main()
