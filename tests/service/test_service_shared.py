"""The shared state on each backend (a SQLite state file, a real PostgreSQL via pgserver): two
instances stand for two workers or replicas. Slots, ``Idempotency-Key`` answers and jobs
decided by one are seen by the other; a worker that stops beating frees what it held."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memreader.errors import ConfigError
from memreader.service.shared import (
    JobRecord,
    SharedState,
    StoredAnswer,
    open_shared_state,
    state_url_for,
)
from memreader.service.shared.base import WORKERS
from tests.pg_server import create_database, running_server

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pg_admin() -> Iterator[str]:
    with running_server() as admin_url:
        yield admin_url


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], SharedState]]:
    """``make()``: another worker's view of one shared state."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}.service-state"
    else:
        url = create_database(request.getfixturevalue("pg_admin"), f"shared{os.getpid()}")
    made: list[SharedState] = []

    def make() -> SharedState:
        made.append(open_shared_state(url))
        return made[-1]

    yield make
    for state in made:
        state.close()


def test_slots_are_counted_over_every_worker(pair: Callable[[], SharedState]) -> None:
    one, two = pair(), pair()
    token, held = one.slot_take("alice-app", limit=2)
    assert token is not None and held == 1
    assert two.slot_take("alice-app", limit=2)[1] == 2
    assert two.slot_take("alice-app", limit=2) == (None, 2)
    assert one.slot_take("bob-app", limit=2)[0] is not None  # another key has its own
    one.slot_free(token)
    assert two.slots_held("alice-app") == 1


def test_a_keys_slots_never_exceed_the_limit_under_concurrent_takes(
    pair: Callable[[], SharedState],
) -> None:
    # Two workers, two threads each, taking and freeing one key's 2 slots as fast as they can:
    # the count and the take are one decision (SQLite: one statement), so no more than 2 are
    # ever held, and every take that got a token was counted.
    states = [pair(), pair()]
    held: list[str] = []
    counted: list[int] = []
    lock = threading.Lock()
    peak = refused = 0

    def churn(state: SharedState) -> None:
        nonlocal peak, refused
        for _ in range(150):
            token, _ = state.slot_take("alice-app", limit=2)
            if token is None:
                with lock:
                    refused += 1
                continue
            with lock:
                held.append(token)
                peak = max(peak, len(held))
            counted.append(state.slots_held("alice-app"))
            with lock:
                held.remove(token)
            state.slot_free(token)

    threads = [threading.Thread(target=churn, args=(s,)) for s in states for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert 1 <= peak <= 2 and max(counted) <= 2 and len(counted) + refused == 600
    assert states[0].slots_held("alice-app") == 0
    assert states[1].slot_take("alice-app", limit=2)[1] == 1


def test_a_keys_rate_is_counted_over_every_worker(pair: Callable[[], SharedState]) -> None:
    one, two = pair(), pair()
    t = 1_000_000.0  # the bucket's clock, given: no test waits
    assert one.rate_take("alice-app", 2, now=t) == two.rate_take("alice-app", 2, now=t) == 0
    assert two.rate_take("alice-app", 2, now=t) == pytest.approx(30.0)  # one refills in 30 s
    assert one.rate_take("bob-app", 2, now=t) == 0  # another key has its own bucket
    assert one.rate_take("alice-app", 2, now=t + 15) == pytest.approx(15.0)
    assert one.rate_take("alice-app", 2, now=t + 30) == 0
    assert two.rate_take("alice-app", 2, now=t + 30) > 0


def test_answers_are_kept_for_every_worker(pair: Callable[[], SharedState]) -> None:
    one, two = pair(), pair()
    slot = ("alice-app", "read", "order-17")
    assert one.idem_begin(slot, "d1", 3600, 100).kind == "new"
    assert two.idem_begin(slot, "d1", 3600, 100).kind == "running"
    assert two.idem_begin(slot, "d2", 3600, 100).kind == "mismatch"
    answer = StoredAnswer(200, b'{"events": []}', "application/json")
    one.idem_finish(slot, answer)
    replay = two.idem_begin(slot, "d1", 3600, 100)
    assert (replay.kind, replay.answer) == ("done", answer)
    # A failed first request is forgotten: the retry on another worker runs.
    other = ("alice-app", "read", "order-18")
    assert one.idem_begin(other, "d", 3600, 100).kind == "new"
    one.idem_abandon(other)
    assert two.idem_begin(other, "d", 3600, 100).kind == "new"


def test_jobs_are_seen_limited_and_cancelled_from_every_worker(
    pair: Callable[[], SharedState],
) -> None:
    one, two = pair(), pair()
    data = {"id": "j1", "status": "running", "progress": {"inputs_done": 0}}
    assert one.job_add(JobRecord("j1", "alice-app", data, False, one.worker), limit=1) is None
    second = JobRecord("j2", "alice-app", {**data, "id": "j2"}, False, two.worker)
    assert two.job_add(second, limit=1) == 1  # alice runs one already, on worker one
    one.job_save("j1", {**data, "progress": {"inputs_done": 3}})
    seen = two.job_load("j1")
    assert seen is not None and seen.owner == "alice-app"
    assert seen.data["progress"]["inputs_done"] == 3 and not seen.cancel
    cancelled = two.job_cancel("j1")
    assert cancelled is not None and cancelled.data["status"] == "cancelling"
    assert one.job_cancel_asked("j1")
    assert two.job_load("missing") is None and two.job_cancel("missing") is None
    one.job_save("j1", {**data, "status": "cancelled"})
    assert two.job_add(second, limit=1) is None  # the first ended: room for another
    for n in range(3):
        finished = JobRecord(f"f{n}", "bob-app", {"status": "succeeded"}, False, one.worker)
        one.job_add(finished, limit=9)
        one.job_save(f"f{n}", {"status": "succeeded"})
    one.job_trim(keep=2)  # four finished (j1 and f0-f2): the two newest stay
    assert [two.job_load(i) is not None for i in ("j1", "f0", "f1", "f2")] == [0, 0, 1, 1]
    assert two.job_load("j2") is not None  # running jobs always stay


def test_a_dead_workers_slots_answers_and_jobs_are_freed(
    pair: Callable[[], SharedState],
) -> None:
    dead, alive = pair(), pair()
    dead.slot_take("alice-app", limit=1)
    dead.idem_begin(("alice-app", "read", "k"), "d", 3600, 100)
    job = JobRecord("j", "alice-app", {"id": "j", "status": "running"}, False, dead.worker)
    dead.job_add(job, limit=1)
    assert alive.slot_take("alice-app", limit=1)[0] is None
    # The dead worker's last beat is long past (it crashed: no close, no more beats).
    with alive.transaction() as run:
        run(f"UPDATE {WORKERS} SET seen = 0 WHERE id = ?", (dead.worker,))
    assert alive.slot_take("alice-app", limit=1)[0] is not None
    assert alive.idem_begin(("alice-app", "read", "k"), "d", 3600, 100).kind == "new"
    alive.beat()  # clears what the dead worker left
    lost = alive.job_load("j")
    assert lost is not None and lost.data["status"] == "failed"
    assert lost.data["problem"]["type"].endswith("worker-lost")


def test_the_state_follows_the_store() -> None:
    assert state_url_for("sqlite:///m.db") == "sqlite:///m.db.service-state"
    assert state_url_for("postgresql://u@db/mem") == "postgresql://u@db/mem"
    assert state_url_for(None) == state_url_for("sqlite://:memory:") == "memory"
    with pytest.raises(ConfigError, match="shared-state URL"):
        open_shared_state("redis://cache")


def _pause(state: SharedState) -> None:
    """``state``'s worker stops beating (paused) and its last beat is long past."""
    state._stop.set()
    if state._beats is not None:
        state._beats.join(10)
    with state.transaction() as run:
        run(f"UPDATE {WORKERS} SET seen = 0 WHERE id = ?", (state.worker,))


def test_a_paused_workers_jobs_and_lease_are_taken_back_for_good(
    pair: Callable[[], SharedState],
) -> None:
    one, two = pair(), pair()
    data = {"id": "j1", "status": "running", "progress": {"inputs_done": 0}}
    assert one.job_add(JobRecord("j1", "alice-app", data, False, one.worker), limit=1) is None
    token = one.lease_take("maintain")
    assert token is not None and one.lease_held(token)
    assert two.lease_take("maintain") is None  # one holder at a time
    second = JobRecord("j2", "alice-app", {**data, "id": "j2"}, False, two.worker)
    assert two.job_add(second, limit=1) == 1
    _pause(one)
    # Another worker takes the job's place and the lease: both are taken back from one.
    assert two.job_add(second, limit=1) is None
    lost = two.job_load("j1")
    assert lost is not None and lost.data["status"] == "failed"
    assert lost.data["problem"]["type"].endswith("worker-lost")
    taken = two.lease_take("maintain")
    assert taken is not None and two.lease_held(taken)
    # The paused worker resumes: its tokens are useless, its job refuses its saves.
    one.beat()
    assert not one.lease_held(token) and one.lease_take("maintain") is None
    assert one.job_should_stop("j1") == "lost"
    assert not one.job_save("j1", {**data, "status": "succeeded"})
    after = two.job_load("j1")
    assert after is not None and after.data["status"] == "failed"
    assert two.job_should_stop("j2") is None and two.job_save("j2", {**data, "id": "j2"})


def test_a_fresh_state_file_opens_while_another_worker_holds_its_lock(tmp_path: Path) -> None:
    # Another worker starting on the same fresh file holds its write lock (no WAL yet):
    # SQLite answers "database is locked" at once; the opening waits its turn instead.
    path = tmp_path / "fresh.service-state"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE starting (x)")
    opened: list[SharedState] = []
    opener = threading.Thread(target=lambda: opened.append(open_shared_state(f"sqlite:///{path}")))
    opener.start()
    opener.join(0.3)  # it waits for the lock meanwhile
    other.execute("COMMIT")
    other.close()
    opener.join(30)
    assert len(opened) == 1
    token = opened[0].lease_take("maintain")
    assert token is not None
    opened[0].close()


def test_an_erase_withdraws_kept_answers_on_every_worker(pair: Callable[[], SharedState]) -> None:
    one, two = pair(), pair()
    for key, said in (("k1", "Ana plays the cello"), ("k2", "Bob plays chess")):
        slot = ("alice-app", "request", key)
        assert one.idem_begin(slot, "d", 3600, 100).kind == "new"
        one.idem_finish(slot, StoredAnswer(200, f'{{"memory": "{said}"}}'.encode(), "a/json"))
    assert two.idem_withdraw([b"cello", b"nothing kept says this"]) == 1
    gone = one.idem_begin(("alice-app", "request", "k1"), "d", 3600, 100)
    assert gone.kind == "done" and gone.answer is not None
    assert gone.answer.status == 410 and b"cello" not in gone.answer.body
    kept = one.idem_begin(("alice-app", "request", "k2"), "d", 3600, 100)
    assert kept.answer is not None and b"chess" in kept.answer.body
    assert two.idem_withdraw([b"cello"]) == 0  # withdrawn once
