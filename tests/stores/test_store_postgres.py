"""The PostgreSQL memory store's own behaviour (issue 19) against a real server (``pgserver``:
PostgreSQL with pgvector, started once for this module on a unix socket in a temporary folder),
through the public API: ``open_store("postgresql://...")``. Each test gets a fresh database.

Its schema (the vector dimension fixed by the first vector, the HNSW, GIN and unique indexes),
its ranking beside the embedded store's, the word budget of its text search and the ``pg_stats``
estimates behind it, its URLs, options and secrets, and batch jobs into it.

What both backends share (writing, replacing, forgetting, search, owners, bad input, two
processes at once) runs on both: tests/stores/test_store_contract.py and
tests/stores/test_store_contract_search.py.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from memreader.batch.job import load_job
from memreader.batch.job_run import run_job
from memreader.batch.sinks import store as store_sink
from memreader.cli import main
from memreader.errors import ConfigError, InputError, StoreError
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.pg_server import create_database
from tests.stores.store_backends import T0, item, sql

pytestmark = pytest.mark.timeout(120)

_NAMES = itertools.count()


@pytest.fixture
def server(pg_admin: str) -> str:
    """The admin URL of the run's PostgreSQL server (tests/stores/conftest.py)."""
    return pg_admin


@pytest.fixture
def url(server: str) -> str:
    """A fresh, empty database."""
    return create_database(server, f"t{next(_NAMES)}")


@pytest.fixture
def store(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder()) as opened:
        yield opened


# -- schema ------------------------------------------------------------------------------


def test_the_first_vector_fixes_the_dimension(url: str, server: str) -> None:
    with open_store(url, text_only=True) as store:
        store.write([item("t", "no vector yet")])
        store.write([item("a", "Ana lives in Porto", vector=[1.0, 0.0, 0.0])])
        with pytest.raises(InputError, match=r"item 1 \(id 'c'\): the embedding has 2 dim"):
            store.write([item("b", "Bo", vector=[0.0, 1.0, 0.0]), item("c", "Cy", vector=[1, 0])])
        assert store.get("b", user_id="u1") is None  # the failed write left nothing behind
    with pytest.raises(ConfigError, match=r"dimension=4, but .* holds 3-dimension"):
        open_store(url, dimension=4, text_only=True)
    fixed = open_store(create_database(server, "fixed"), dimension=2, text_only=True)
    with fixed, pytest.raises(InputError, match="this store holds 2-dimension vectors"):
        fixed.write([item("a", "Ana", vector=[1.0, 0.0, 0.0])])
    indexes = dict(sql(url, "SELECT indexname, indexdef FROM pg_indexes"))
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["memreader_memories_hnsw"]
    assert "USING gin (fts)" in indexes["memreader_memories_fts"]
    assert "WHERE (status = 'active'::text)" in indexes["memreader_memories_active_hash"]


def test_the_unique_index_refuses_a_second_active_copy(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto")])
    with pytest.raises(psycopg.errors.UniqueViolation):
        sql(
            url,
            "INSERT INTO memreader_memories (id, user_id, session_id, memory_type, memory, "
            "content_hash, status, recorded_at, supports, item) SELECT 'z', user_id, "
            "session_id, memory_type, memory, content_hash, 'active', now(), supports, item "
            "FROM memreader_memories WHERE id = 'a'",
        )


# -- search: ranking, the word budget ------------------------------------------------------


def test_both_stores_rank_alike(store: MemoryStore, tmp_path: Any) -> None:
    texts = [f"entry {i} mentions {'tea' if i % 3 else 'coffee'} and day {i}" for i in range(40)]
    batch = [item(f"i{n}", text, at=T0 - timedelta(days=n)) for n, text in enumerate(texts)]
    with open_store(f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder()) as embedded:
        embedded.write(batch, now=T0)
        expected = embedded.search("coffee day 9", user_id="u1", k=8, now=T0)
    store.write(batch, now=T0)
    got = store.search("coffee day 9", user_id="u1", k=8, now=T0)
    # The vector lists and fusion agree; the text lists rank with bm25 there, ts_rank here.
    assert got[0].memory.id == expected[0].memory.id
    assert {h.memory.id for h in got[:5]} & {h.memory.id for h in expected[:5]}
    assert [h.score.similarity for h in got if h.memory.id == "i9"] == pytest.approx(
        [h.score.similarity for h in expected if h.memory.id == "i9"], rel=1e-5
    )


def test_text_search_ranks_words_past_the_budget_over_the_newest_rows(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memreader.stores.postgres import text_search as postgres_text

    store.write([item(f"t{i}", f"tea note {i}") for i in range(10)], now=T0)
    store.write([item("z", "tea in Zanzibar")], now=T0)

    def found(query: str) -> set[str]:
        return {h.memory.id for h in store.search(query, user_id="u1", k=20, mode="text")}

    assert len(found("tea zanzibar")) == 11  # 11 rows: within the default budget
    monkeypatch.setattr(postgres_text, "TEXT_BUDGET", 5)
    # "tea" is in 11 rows, more than the budget: only the rare word is ranked; a query of
    # common words only ranks the owner's 5 newest rows holding them.
    assert found("tea zanzibar") == {"z"}
    assert found("tea") == {"z", "t9", "t8", "t7", "t6"}
    # A write of this store refreshes the counts: "zanzibar" is now past the budget too.
    store.write([item(f"z{i}", f"Zanzibar again {i}") for i in range(5)], now=T0)
    assert found("zanzibar") == {f"z{i}" for i in range(5)}
    assert found("again zanzibar") == {f"z{i}" for i in range(5)}
    assert found("zanzibar 3") == {"t3", "z3"}


def test_text_budget_reads_postgres_statistics_once_analyzed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``ANALYZE``, the words' rows are estimated from ``pg_stats`` (no count per
    word), and the budget still keeps a common word out."""
    from memreader.stores.postgres import text_search as postgres_text

    with open_store(url, text_only=True) as store:
        store.write([item(f"t{i}", f"tea note {i}") for i in range(10)], now=T0)
        store.write([item("z", "tea in Zanzibar")], now=T0)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memreader_memories")
    monkeypatch.setattr(postgres_text, "TEXT_BUDGET", 5)
    counted: list[str] = []
    real_get = postgres_text.WordStats.get

    def get(self: Any, conn: Any, owner: str, words: Any, stamp: int) -> Any:
        rows = real_get(self, conn, owner, words, stamp)
        counted.extend([] if rows is not None else words)
        return rows

    monkeypatch.setattr(postgres_text.WordStats, "get", get)
    with open_store(url, text_only=True) as store:
        found = {h.memory.id for h in store.search("tea zanzibar", user_id="u1", mode="text")}
    assert found == {"z"} and counted == []


@pytest.mark.parametrize(("small", "large"), [(100, 200), (0, 100), (0, 0)])
def test_each_way_of_searching_a_category_finds_its_nearest_members(
    url: str, monkeypatch: pytest.MonkeyPatch, small: int, large: int
) -> None:
    """A category read from its links (at most SMALL_CATEGORY), through the HNSW list at its
    widest (at most LARGE_CATEGORY) or through the usual list: the same hits, all members."""
    from memreader.stores.category_types import CategoryDef
    from memreader.stores.postgres import operations as postgres_ops

    monkeypatch.setattr(postgres_ops, "SMALL_CATEGORY", small)
    monkeypatch.setattr(postgres_ops, "LARGE_CATEGORY", large)
    rng = random.Random(7)
    vectors = [[rng.gauss(0, 1) for _ in range(8)] for _ in range(40)]
    batch = [item(f"i{n}", f"note {n}", vector=v, model="m") for n, v in enumerate(vectors)]

    class Fixed:
        def embed(self, texts: Any) -> list[list[float]]:
            return [vectors[7] for _ in texts]  # member i7 is the nearest

    with open_store(url, embedder=Fixed()) as store:
        store.write(batch, now=T0)
        store.upsert_categories("u1", [CategoryDef(name="odd", description="odd notes")])
        store.link_categories("u1", {f"i{n}": ["odd"] for n in range(1, 40, 2)})
        hits = store.search("zzz", user_id="u1", k=5, mode="vector", category="odd")
        ids = [h.memory.id for h in hits]
    assert len(ids) == 5 and ids[0] == "i7" and all(int(i[1:]) % 2 == 1 for i in ids)


# -- URLs, options, secrets -------------------------------------------------------------------


def test_urls_options_and_secrets(url: str) -> None:
    secret = "hunter2-s3cret"
    unreachable = f"postgresql://ana:{secret}@127.0.0.1:1/mem?sslmode=disable"
    with pytest.raises(StoreError, match="cannot open the postgresql store") as failed:
        open_store(unreachable, timeout=2, text_only=True)
    assert secret not in str(failed.value) and "ana@127.0.0.1:1/mem" in str(failed.value)
    with pytest.raises(ConfigError, match="unknown postgresql store option") as bad:
        open_store(unreachable, colour="red", text_only=True)
    assert secret not in str(bad.value)
    with pytest.raises(ConfigError, match="near_duplicate must be a number"):
        open_store(unreachable, near_duplicate=1.5, text_only=True)
    # The test server trusts local sockets, so a password in the URL is accepted and ignored.
    with_password = url.replace("postgres:@", f"postgres:{secret}@")
    store = open_store(with_password, text_only=True)
    assert secret not in repr(store) and secret not in str(vars(store).get("url"))
    store.close()
    with pytest.raises(StoreError, match="is closed") as closed:
        store.get("a", user_id="u1")
    assert secret not in str(closed.value)


# -- batch jobs into a PostgreSQL store ---------------------------------------------------------


def _scenes(tag: str, n: int, *, changed: int | None = None) -> str:
    """``n`` two-message scenes as JSONL; scene ``changed`` says something else."""
    lines = []
    for k in range(n):
        word = "coffee" if k == changed else "tea"
        scene = [
            {"role": "user", "content": f"{tag}: day {k}, I drank {word} number {k}."},
            {"role": "assistant", "content": f"Noted, {tag} {k}."},
        ]
        lines.append(json.dumps(scene))
    return "\n".join(lines) + "\n"


def _job(folder: Path, store_url: str, **extra: Any) -> Path:
    job = {
        "reader": {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}},
        "inputs": [
            {"path": "in", "format": "jsonl", "user_id": {"from": "constant", "value": "u1"}}
        ],
        "output": {"store": store_url, "path": "out"},
        **extra,
    }
    (folder / "in").mkdir(parents=True, exist_ok=True)
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def _memories(url: str) -> list[tuple[Any, ...]]:
    return sql(url, "SELECT user_id, id, status, memory FROM memreader_memories ORDER BY id")


def test_a_job_into_a_postgresql_store_its_rerun_and_a_changed_input(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "s3cretpw"  # the test server trusts its socket: the password is ignored
    job_file = _job(tmp_path, url.replace("postgres:@", f"postgres:{secret}@"))
    (tmp_path / "in" / "a.jsonl").write_text(_scenes("a", 3), encoding="utf-8")
    (tmp_path / "in" / "b.jsonl").write_text(_scenes("b", 2), encoding="utf-8")
    assert main(["ingest", str(job_file), "--quiet"]) == 0
    stored = _memories(url)
    assert len(stored) == 5 and {r[2] for r in stored} == {"active"}
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    where = url.replace("postgres:@", "postgres:***@")
    assert manifest["inputs"]["in/a.jsonl"]["outputs"] == [f"{where} (input:in/a.jsonl)"]
    for written in (tmp_path / "out").iterdir():
        assert secret not in written.read_text(), written
    with open_store(url, text_only=True) as opened:
        hit = opened.search("b: day 1", user_id="u1", k=1)[0].memory
    assert "b: day 1" in hit.item.memory
    keys = sql(
        url,
        "SELECT DISTINCT k.key FROM memreader_keys k JOIN memreader_memories m "
        "ON m.rowid = k.memory_rowid WHERE m.id = %s AND k.key LIKE 'input:%%'",
        hit.id,
    )
    assert keys == [("input:in/b.jsonl",)]  # every support keyed by its input
    # Re-ingesting what is stored: the same rows, no history, nothing embedded (dedup looks
    # the items up in the PostgreSQL store).
    history = sql(url, "SELECT count(*) FROM memreader_history")
    job = load_job(job_file)
    again = run_job(job, restart=True)
    assert again.read == 2 and again.counts["items"] == 5 and again.counts["embeddings"] == 0
    assert _memories(url) == stored
    assert sql(url, "SELECT count(*) FROM memreader_history") == history
    # A changed input: its changed scene replaces the old memory, which is superseded.
    (tmp_path / "in" / "a.jsonl").write_text(_scenes("a", 3, changed=1), encoding="utf-8")
    changed = run_job(job)
    assert changed.read == 1 and changed.counts["embeddings"] == 1
    now = {r[1]: r for r in _memories(url)}
    old = [r[1] for r in stored if "day 1" in r[3] and r[3].startswith("user: a:")]
    assert len(now) == 6 and [now[i][2] for i in old] == ["superseded"]
    assert [r[2] for r in now.values() if "coffee" in r[3]] == ["active"]
    with open_store(url, text_only=True) as opened:
        assert [h.event for h in opened.history(old[0], user_id="u1")] == ["ADD", "SUPERSEDE"]
    capsys.readouterr()


def test_a_job_killed_before_its_commit_reruns_to_the_rows_of_a_clean_run(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(name: str, *, die: bool) -> list[tuple[Any, ...]]:
        db = create_database(server, name)
        job_file = _job(tmp_path / name, db, scenes_per_call=1)
        data = tmp_path / name / "in" / "a.jsonl"
        data.write_text(_scenes("a", 4), encoding="utf-8")
        job = load_job(job_file)
        run_job(job)
        data.write_text(_scenes("a", 4, changed=0), encoding="utf-8")
        if die:
            with monkeypatch.context() as patch:
                patch.setattr(store_sink, "PART_ITEMS", 1)

                def killed(self: store_sink.StoreInputWriter) -> list[str]:
                    raise SystemExit("killed")

                patch.setattr(store_sink.StoreInputWriter, "commit", killed)
                with pytest.raises(SystemExit):
                    run_job(job)
            # The parts written are there, beside what the first run committed.
            assert [r[2] for r in _memories(db)] == ["active"] * 5
        run_job(job)
        return _memories(db)

    killed, fresh = run("killed", die=True), run("fresh", die=False)
    assert killed == fresh and sorted(r[2] for r in fresh) == ["active"] * 4 + ["superseded"]
