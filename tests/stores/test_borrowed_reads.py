"""Borrowed reads (``memreader.stores.borrowed``): inside ``borrowed_reads()`` a SQLite store's
search hands out the memories it built for earlier searches and ``hits_body`` reuses their
JSON; the answer must be the one a fresh search gives, byte for byte, a changed or erased row
must never come back as it was, and a search outside the block still gives the caller
memories of its own to change."""

from __future__ import annotations

import gc
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memreader import Memory
from memreader.stores.borrowed import HEADS, borrowed_reads, borrowing
from memreader.stores.shapes import hits_body

#: Every search at one moment: the time decay of a score moves with the clock.
NOW = datetime(2030, 1, 1, tzinfo=UTC)
_WORDS = ["Porto", "coffee", "sister", "Åsa", "chess", "June", "train", "naïve", "😀", "river"]


def _memory(path: Path) -> Memory:
    return Memory({"config": {"embedder": {"backend": "hash"}}}, store=f"sqlite:///{path}")


def _filled(path: Path, rng: random.Random, count: int = 40) -> Memory:
    memory = _memory(path)
    for n in range(count):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 8)))
        memory.add_memory(f"{text} {n}", user_id="ana", session_id=f"s{n % 3}")
    return memory


def _borrowed_page(memory: Memory, query: str, k: int = 10) -> bytes:
    with borrowed_reads():
        return hits_body(memory.search(query, user_id="ana", k=k, now=NOW))


def test_a_borrowed_page_is_a_fresh_page_byte_for_byte(tmp_path: Path) -> None:
    rng = random.Random(7)
    memory = _filled(tmp_path / "m.db", rng)
    pages = 0
    for _ in range(60):  # repeated words: most borrowed pages reuse what earlier ones built
        query = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
        k = rng.choice([1, 5, 10, 40])
        fresh = hits_body(memory.search(query, user_id="ana", k=k, now=NOW))
        assert _borrowed_page(memory, query, k) == fresh
        assert _borrowed_page(memory, query, k) == fresh  # served from what was kept
        pages += fresh != b'{"hits":[]}'
    assert pages > 40
    assert memory.store._ops.kept_memory.cache_info().hits > 0  # pages from kept memories
    memory.close()


def test_borrowed_memories_are_shared_and_a_callers_own_are_not(tmp_path: Path) -> None:
    memory = _filled(tmp_path / "m.db", random.Random(3))
    with borrowed_reads():
        first = memory.search("Porto coffee", user_id="ana", now=NOW)
        again = memory.search("Porto coffee", user_id="ana", now=NOW)
    assert first and [h.memory for h in first] == [h.memory for h in again]
    assert all(a.memory is b.memory for a, b in zip(first, again, strict=True))
    # Outside the block each search builds the caller's own, which it may change at will.
    own = memory.search("Porto coffee", user_id="ana", now=NOW)
    assert all(o.memory is not f.memory for o, f in zip(own, first, strict=True))
    own[0].memory.item.metadata.tags.append("changed by the caller")
    own[0].memory.item.memory = "not what the store holds"
    with borrowed_reads():
        later = hits_body(memory.search("Porto coffee", user_id="ana", now=NOW))
    assert b"changed by the caller" not in later and b"not what the store holds" not in later
    assert later == hits_body(memory.search("Porto coffee", user_id="ana", now=NOW))
    memory.close()


def test_a_write_is_in_the_next_borrowed_page(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = _filled(path, random.Random(5))
    with borrowed_reads():
        hit = memory.search("Porto", user_id="ana", k=1)[0]
    event = memory.update(hit.id, "Porto is where Ana lives now", user_id="ana")
    page = _borrowed_page(memory, "Porto lives", k=40)
    assert event.memory_id.encode() in page and b"Porto is where Ana lives now" in page
    assert page == hits_body(memory.search("Porto lives", user_id="ana", k=40, now=NOW))
    # Another connection's write (another worker, another process) as well.
    other = _memory(path)
    other.add_memory("Porto trams are yellow", user_id="ana")
    other.close()
    page = _borrowed_page(memory, "Porto trams yellow", k=40)
    assert b"Porto trams are yellow" in page
    assert page == hits_body(memory.search("Porto trams yellow", user_id="ana", k=40, now=NOW))
    memory.close()


def test_an_erased_memory_leaves_no_kept_copy_or_json(tmp_path: Path) -> None:
    memory = _filled(tmp_path / "m.db", random.Random(11))
    marker = "Ana's secret river code 4471"
    memory.add_memory(marker, user_id="ana")
    page = _borrowed_page(memory, "secret river code", k=5)
    assert marker.encode() in page
    ops = memory.store._ops
    assert ops.kept_memory.cache_info().currsize > 0
    assert [w for _, w in HEADS._written.values() if marker.encode() in w]  # its JSON kept
    (found,) = [h for h in memory.search("secret river code", user_id="ana") if marker in h.text]
    memory.delete(found.id, user_id="ana", erase=True)
    del found
    # The erase is a write: the kept memories are dropped at once, and their JSON with them.
    assert ops.kept_memory.cache_info().currsize == 0
    gc.collect()
    assert not [w for _, w in HEADS._written.values() if marker.encode() in w]
    memory.close()


def test_the_kept_memories_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memreader.stores.sqlite.operations.KEPT", 5)
    memory = _filled(tmp_path / "m.db", random.Random(13))
    for word in _WORDS:
        assert _borrowed_page(memory, word, k=10) == hits_body(
            memory.search(word, user_id="ana", k=10, now=NOW)
        )
    info = memory.store._ops.kept_memory.cache_info()
    assert info.maxsize == 5 and info.currsize == 5 and info.misses > 5
    memory.close()


def test_borrowing_is_the_blocks_own_and_ends_with_it() -> None:
    assert not borrowing()
    with borrowed_reads():
        assert borrowing()
        with pytest.raises(ZeroDivisionError), borrowed_reads():
            _ = 1 / 0
        assert borrowing()
    assert not borrowing()
