"""A service in several workers: what one worker decides, every other sees. Two apps on one
store stand for two workers (each its own process state: slots, answers, jobs; the same state
file beside the store), and ``memreader serve --workers 2`` runs for real: an
``Idempotency-Key`` replayed on another worker gets the first answer, a key's limit holds
across workers, a job started on one is seen and cancelled from another."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memreader.cores import PINNED_ENV, pin_to, placements, usable_cores, worker_cores
from memreader.service.accept_share import DECLINE_S, ConnectionShares, SharedListener
from memreader.service.shared.tables import WORKERS
from tests.common import HASH_EMBEDDER, ROOT
from tests.service.http_client import CHAT, auth, key_entries, problem, read, wait_for_job
from tests.service.worker_apps import Workers, until
from tests.service_server import free_port

pytestmark = pytest.mark.timeout(120)


def test_an_idempotency_key_replayed_on_another_worker_gets_the_first_answer(
    workers: Workers, tmp_path: Path
) -> None:
    (a, state_a), (b, _) = workers(2)
    assert state_a.shared.path == str(tmp_path / "memories.db.service-state")  # type: ignore[attr-defined]
    retry = {"Idempotency-Key": "order-17"}
    first = read(a, store=True, headers=retry)
    again = read(b, store=True, headers=retry)
    assert first.status_code == again.status_code == 200, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content
    other_body = read(b, store=True, headers=retry, custom_tags=["changed"])
    assert problem(other_body, 422)["type"].endswith("idempotency-key-reused")
    # One write, whichever worker the retry reached.
    hits = httpx.post(
        f"{b}/v1/memories/search",
        json={"user_id": "alice", "query": "cello"},
        headers=auth("alice"),
    ).json()["hits"]
    assert len({hit["memory"]["id"] for hit in hits}) == len(first.json()["events"])


def test_a_keys_limit_holds_across_workers(workers: Workers) -> None:
    (a, state_a), (b, state_b) = workers(2, max_concurrent_per_key=1)
    port = int(a.rsplit(":", 1)[1])
    # A read on worker A whose body never comes holds alice's one slot (admission takes it
    # from the headers).
    with socket.create_connection(("127.0.0.1", port)) as held:
        held.sendall(
            b"POST /v1/read HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + auth("alice")["Authorization"][7:].encode() + b"\r\n"
            b"Content-Length: 100\r\n\r\n"
        )
        until(lambda: state_b.slots.in_flight("alice-app") == 1, "worker B sees A's slot")
        busy = read(b, include_embeddings=False)
        assert problem(busy, 429)["type"].endswith("too-many-requests")
        assert read(b, "bob").status_code == 200  # another key is not held back
    until(lambda: state_a.slots.in_flight("alice-app") == 0, "the slot is given back")
    assert read(b, include_embeddings=False).status_code == 200


def test_a_keys_rate_holds_across_workers(workers: Workers) -> None:
    (a, _), (b, _) = workers(2, requests_per_minute_per_key=3)
    # Three searches of alice's key on either worker use its minute (one refills in 20 s).
    body = {"user_id": "alice", "query": "cello"}
    for url in (a, b, a):
        answer = httpx.post(f"{url}/v1/memories/search", json=body, headers=auth("alice"))
        assert answer.status_code == 200, answer.text
    limited = httpx.post(f"{b}/v1/memories/search", json=body, headers=auth("alice"))
    assert problem(limited, 429)["type"].endswith("rate-limited")
    assert 1 <= int(limited.headers["retry-after"]) <= 20
    bob = {"user_id": "bob", "query": "cello"}
    assert httpx.post(f"{b}/v1/memories/search", json=bob, headers=auth("bob")).status_code == 200


def test_a_job_started_on_one_worker_is_seen_and_cancelled_from_another(
    workers: Workers, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for n in range(40):
        (data / f"chat{n:02d}.json").write_text(json.dumps([CHAT] * 20))
    (a, _), (b, _) = workers(2, jobs={"input_roots": ["data"]})
    spec = {"inputs": [{"path": "."}], "scenes_per_call": 2}
    started = httpx.post(f"{a}/v1/jobs", json=spec, headers=auth("alice"))
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    seen = httpx.get(f"{b}/v1/jobs/{job_id}", headers=auth("alice"))
    assert seen.status_code == 200 and seen.json()["id"] == job_id
    problem(httpx.get(f"{b}/v1/jobs/{job_id}", headers=auth("bob")), 404)  # walled off
    # alice's one running job counts on every worker.
    problem(httpx.post(f"{b}/v1/jobs", json=spec, headers=auth("alice")), 429)
    cancelled = httpx.delete(f"{b}/v1/jobs/{job_id}", headers=auth("alice"))
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelling"
    job = wait_for_job(a, job_id, "alice")
    assert job["status"] == "cancelled", job
    assert job["progress"]["inputs_done"] < 40
    until(
        lambda: (
            httpx.get(f"{b}/v1/jobs/{job_id}", headers=auth("alice")).json()["status"]
            == "cancelled"
        ),
        "worker B shows the job's end",
    )


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="counts workers in /proc")
@pytest.mark.parametrize("store", ["sqlite:///m.db", None], ids=["store", "no-store"])
def test_serve_with_two_workers(tmp_path: Path, store: str | None) -> None:
    # Without a store the workers share a state file of the parent's making.
    reader: dict[str, Any] = {"embedder": HASH_EMBEDDER}
    if store is not None:
        reader["store"] = store
    config = {"config": reader, "service": {"keys": key_entries()}}
    (tmp_path / "service.yaml").write_text(json.dumps(config))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "memreader.cli", "serve", "--config", "service.yaml"]
    command += ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=tmp_path, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _answers(url), "the service answers", tries=3000)
        until(lambda: len(_children(server.pid)) == 2, "two workers")
        # Auto: on two cores or more, each worker on its own half; on one, both where they were.
        placed = [worker_cores(index, 2, usable_cores()) for index in range(2)]
        expected = [set(cores) if cores else set(usable_cores()) for cores in placed]
        assert _affinities(server.pid) == sorted(expected, key=sorted)
        retry = {"Idempotency-Key": "w-1"}
        # Each request opens its own connection: the kernel hands them to either worker.
        answers = [read(url, store=store is not None, headers=retry) for _ in range(6)]
        assert answers[0].status_code == 200, answers[0].text
        assert all(answer.content == answers[0].content for answer in answers)
        assert all(answer.headers.get("idempotent-replayed") == "true" for answer in answers[1:])
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
    assert not _children(server.pid)


@pytest.mark.skipif(sys.platform != "linux", reason="counts workers in /proc")
def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    config = {"config": {"embedder": HASH_EMBEDDER, "store": "sqlite:///m.db"}, "service": {}}
    (tmp_path / "service.yaml").write_text(json.dumps(config))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "memreader.cli", "serve", "--config", "service.yaml"]
    command += ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    command += ["--no-pin-workers"]
    server = subprocess.Popen(command, cwd=tmp_path, env=env)
    url = f"http://127.0.0.1:{port}"
    workers: list[int] = []
    try:
        until(lambda: _answers(url), "the service answers", tries=3000)
        until(lambda: len(_children(server.pid)) == 2, "two workers")
        assert _affinities(server.pid) == [set(usable_cores())] * 2  # left where they were
        workers = _children(server.pid)
        server.kill()  # SIGKILL: the supervisor runs no handler of its own
        server.wait(30)
        until(lambda: not any(_alive(pid) for pid in workers), "the orphans stop", tries=3000)
        assert not _answers(url)
    finally:
        if server.poll() is None:
            server.kill()
        for pid in workers:  # never leave an orphan behind, whatever failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _affinities(pid: int) -> list[set[int]]:
    """The cores each child of ``pid`` may run on, in order."""
    return sorted((os.sched_getaffinity(child) for child in _children(pid)), key=sorted)


@given(
    workers=st.integers(1, 12),
    cores=st.lists(st.integers(0, 63), min_size=1, max_size=16, unique=True).map(sorted),
    pin=st.sampled_from([None, True, False]),
)
def test_each_worker_is_given_cores_of_its_own_that_together_are_every_core(
    workers: int, cores: list[int], pin: bool | None
) -> None:
    placed = [worker_cores(index, workers, cores, pin) for index in range(workers)]
    if pin is False or workers == 1 or (pin is None and workers > len(cores)):
        assert placed == [None] * workers  # where the kernel puts them
    elif workers > len(cores):  # pinned beyond the cores: one core each, in turn
        assert placed == [[cores[index % len(cores)]] for index in range(workers)]
    else:
        slices = [set(cores_of or ()) for cores_of in placed]
        assert all(slices)  # none without a core
        assert sum(len(part) for part in slices) == len(cores)  # no core given twice
        assert set().union(*slices) == set(cores)  # and none left idle
        sizes = [len(part) for part in slices]
        assert max(sizes) - min(sizes) <= 1  # shared evenly


def test_a_worker_the_platform_will_not_pin_runs_where_it_did_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(pid: int, cores: set[int]) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.delenv(PINNED_ENV, raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    with caplog.at_level(logging.WARNING, logger="memreader.cores"):
        assert pin_to([0]) is False
    assert "runs unpinned ([0] refused: [Errno 22] Invalid argument)" in caplog.text
    assert PINNED_ENV not in os.environ  # its share stays the divided one
    # Where the platform has no affinity at all, auto pins nothing (and warns of nothing).
    monkeypatch.delattr(os, "sched_setaffinity")
    assert placements(2) == [None, None]
    assert placements(2, pin=False) == [None, None]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, reaped by init soon, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="counts connections in /proc")
def test_a_burst_of_connections_is_shared_by_the_workers(tmp_path: Path) -> None:
    # Keep-alive clients stay on the worker that accepted them: 16 opened at once must not
    # all land on one worker (issue 31: 32 clients searched one worker, the other idled).
    (tmp_path / "service.yaml").write_text(json.dumps({"config": {"embedder": HASH_EMBEDDER}}))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "memreader.cli", "serve", "--config", "service.yaml"]
    command += ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=tmp_path, env=env)
    clients: list[socket.socket] = []
    try:
        until(lambda: _answers(f"http://127.0.0.1:{port}"), "the service answers", tries=3000)
        until(lambda: len(_children(server.pid)) == 2, "two workers")
        serving: set[int] = set()
        until(lambda: len(_serving(server.pid, port, serving)) == 2, "both workers serving")
        clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(16)]
        for client in clients:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        for client in clients:
            assert client.recv(65536).startswith(b"HTTP/1.1 200")
        held = sorted(_established(pid, port) for pid in _children(server.pid))
        assert sum(held) == 16 and held[0] >= 6, held
    finally:
        for client in clients:
            client.close()
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0


def _serving(parent: int, port: int, seen: set[int]) -> set[int]:
    """``seen``, with the worker that answers one more connection (a worker still starting
    answers none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        assert client.recv(65536).startswith(b"HTTP/1.1 200")
        seen.update(pid for pid in _children(parent) if _established(pid, port))
    return seen


def _established(pid: int, port: int) -> int:
    """The established connections to ``port`` that process ``pid`` holds (Linux /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        count += state == "01" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes
    return count


def test_a_worker_ahead_of_the_others_leaves_a_new_connection_to_them_for_a_moment() -> None:
    parent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    parent.bind(("127.0.0.1", 0))
    parent.listen(8)
    shares = ConnectionShares(2)
    ahead = SharedListener(fileno=os.dup(parent.fileno()), shares=shares, index=0)
    behind = SharedListener(fileno=os.dup(parent.fileno()), shares=shares, index=1)
    shares.publish(0, 3)
    shares.publish(1, 1)
    client = socket.create_connection(parent.getsockname(), timeout=5)
    try:
        with pytest.raises(BlockingIOError):
            ahead.accept()  # two above the fewest: left to the other worker
        behind.accept()[0].close()  # the worker holding fewest takes it at once
        second = socket.create_connection(parent.getsockname(), timeout=5)
        time.sleep(DECLINE_S * 2)  # nobody took it within the moment: the worker ahead does
        ahead.accept()[0].close()
        second.close()
        shares.publish(0, 2)  # one above the fewest: within its share
        third = socket.create_connection(parent.getsockname(), timeout=5)
        ahead.accept()[0].close()
        third.close()
    finally:
        client.close()
        for listener in (ahead, behind, parent):
            listener.close()


def test_a_job_taken_back_from_a_paused_worker_stops_there(
    workers: Workers, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for n in range(40):
        (data / f"chat{n:02d}.json").write_text(json.dumps([CHAT] * 20))
    (a, state_a), (b, _) = workers(2, jobs={"input_roots": ["data"]})
    # Worker A's job thread is paused at its next look at the shared state, and A's
    # heartbeat with it: the whole worker is silent (as under SIGSTOP).
    paused, resume = threading.Event(), threading.Event()
    looked = state_a.shared.job_should_stop

    def should_stop(job_id: str) -> Any:
        if not resume.is_set():
            paused.set()
            resume.wait(60)
        return looked(job_id)

    state_a.shared.job_should_stop = should_stop  # type: ignore[method-assign]
    spec = {"inputs": [{"path": "."}], "scenes_per_call": 2}
    started = httpx.post(f"{a}/v1/jobs", json=spec, headers=auth("alice"))
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    assert paused.wait(60)
    state_a.shared._stop.set()  # its heartbeat stops too
    with state_a.shared.transaction() as run:
        run(f"UPDATE {WORKERS} SET seen = 0 WHERE id = ?", (state_a.shared.worker,))
    # Past A's heartbeat: another job of alice is accepted, and the first is failed.
    second = httpx.post(f"{b}/v1/jobs", json=spec, headers=auth("alice"))
    assert second.status_code == 202, second.text
    lost = httpx.get(f"{b}/v1/jobs/{job_id}", headers=auth("alice")).json()
    assert lost["status"] == "failed" and lost["problem"]["type"].endswith("worker-lost")
    done_when_taken = lost["progress"]["inputs_done"]
    resume.set()  # A resumes: its job stops at once, failed, and writes nothing more
    state_a.shared.beat()
    job = wait_for_job(a, job_id, "alice")
    assert job["status"] == "failed" and job["problem"]["type"].endswith("worker-lost"), job
    assert job["progress"]["inputs_done"] == done_when_taken
    seen = httpx.get(f"{b}/v1/jobs/{job_id}", headers=auth("alice")).json()
    assert seen["status"] == "failed" and seen["progress"]["inputs_done"] == done_when_taken
    httpx.delete(f"{b}/v1/jobs/{second.json()['id']}", headers=auth("alice"))
    wait_for_job(b, second.json()["id"], "alice")
