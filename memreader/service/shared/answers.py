"""The ``Idempotency-Key`` answers in the shared state: one record per (API key, scope,
``Idempotency-Key``) holding the digest of the request it belongs to and, once answered, the
answer; and the withdrawal of kept answers that hold erased text
(:meth:`AnswerTable.idem_withdraw`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memreader.service.shared.tables import IDEM, Tables

__all__ = ["WITHDRAWN_STATUS", "AnswerTable", "IdemVerdict", "StoredAnswer"]

#: The status a withdrawn answer is replayed with (``410 Gone``: the answer held erased text).
WITHDRAWN_STATUS = 410


@dataclass(frozen=True)
class StoredAnswer:
    """A finished request's answer, as it is replayed."""

    status: int
    body: bytes
    media_type: str


@dataclass(frozen=True)
class IdemVerdict:
    """What :meth:`AnswerTable.idem_begin` found: ``new`` (run it), ``running`` (the first is
    still running), ``mismatch`` (the key came with another request) or ``done`` with
    ``answer``."""

    kind: Literal["new", "running", "mismatch", "done"]
    answer: StoredAnswer | None = None


#: What a withdrawn answer is replaced by (no byte of the first answer is kept).
WITHDRAWN = StoredAnswer(
    WITHDRAWN_STATUS,
    json.dumps(
        {
            "type": "urn:memreader:problem:answer-withdrawn",
            "title": "Answer withdrawn",
            "status": WITHDRAWN_STATUS,
            "detail": "the request with this Idempotency-Key was answered, but its answer held "
            "memories erased since, so it is no longer kept; the request is not run again",
        }
    ).encode(),
    "application/problem+json",
)


class AnswerTable(Tables):
    """The ``Idempotency-Key`` methods of the shared state."""

    #: SQL: whether a kept answer's ``body`` holds the bytes of one parameter.
    body_holds = "instr(body, ?) > 0"

    def idem_begin(
        self, slot: tuple[str, str, str], digest: str, ttl_s: float, max_entries: int
    ) -> IdemVerdict:
        """Look up (API key, scope, Idempotency-Key) ``slot``; record it as running when new
        (expired records go first, and the oldest beyond ``max_entries``). ``digest`` names
        the request: a record of another digest is a ``mismatch``."""
        now = time.time()
        with self.transaction("idem:" + "\x1f".join(slot)) as run:
            run(f"DELETE FROM {IDEM} WHERE created < ?", (now - ttl_s,))
            rows = run(
                f"SELECT digest, status, body, media_type, {self._live()} FROM {IDEM} "
                "WHERE principal = ? AND route = ? AND key = ?",
                (*self._live_params(), *slot),
            )
            if rows:
                found, status, body, media_type, alive = rows[0]
                if status is not None or alive:
                    if found != digest:
                        return IdemVerdict("mismatch")
                    if status is None:
                        return IdemVerdict("running")
                    return IdemVerdict("done", StoredAnswer(int(status), bytes(body), media_type))
                # Its worker died before answering: this request runs it.
                run(f"DELETE FROM {IDEM} WHERE principal = ? AND route = ? AND key = ?", slot)
            run(
                f"INSERT INTO {IDEM} (principal, route, key, digest, created, worker) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*slot, digest, now, self.worker),
            )
            (count,) = run(f"SELECT count(*) FROM {IDEM}", ())[0]
            if count > max_entries:
                run(
                    f"DELETE FROM {IDEM} WHERE created <= (SELECT created FROM {IDEM} "
                    "ORDER BY created DESC LIMIT 1 OFFSET ?)",
                    (max_entries,),
                )
            return IdemVerdict("new")

    def idem_finish(self, slot: tuple[str, str, str], answer: StoredAnswer) -> None:
        """Keep ``answer`` for retries, if this worker still runs the request (a worker taken
        for dead and resumed finds its record gone or another's: its answer is not kept)."""
        with self.transaction() as run:
            run(
                f"UPDATE {IDEM} SET status = ?, body = ?, media_type = ? "
                "WHERE principal = ? AND route = ? AND key = ? AND worker = ? AND status IS NULL",
                (answer.status, answer.body, answer.media_type, *slot, self.worker),
            )

    def idem_abandon(self, slot: tuple[str, str, str]) -> None:
        """Forget a request that failed before it changed anything, so a retry runs it."""
        with self.transaction() as run:
            run(
                f"DELETE FROM {IDEM} WHERE principal = ? AND route = ? AND key = ? "
                "AND worker = ? AND status IS NULL",
                (*slot, self.worker),
            )

    def idem_withdraw(self, needles: Sequence[bytes]) -> int:
        """Replace every kept answer that holds one of ``needles`` (erased text, as the
        answers spell it) by the :data:`WITHDRAWN` problem, then scrub what the backend keeps
        of the old bytes (:meth:`scrub`); how many were withdrawn."""
        wanted = [needle for needle in dict.fromkeys(needles) if needle]
        if not wanted:
            return 0
        with self.transaction("idem:withdraw") as run:
            # Searched by the database (kept answers may be large: never all loaded here).
            hit: set[tuple[str, str, str]] = set()
            for needle in wanted:
                hit.update(
                    run(
                        f"SELECT principal, route, key FROM {IDEM} WHERE status IS NOT NULL "
                        f"AND status <> ? AND {self.body_holds}",
                        (WITHDRAWN_STATUS, needle),
                    )
                )
            for principal, route, key in hit:
                run(
                    f"UPDATE {IDEM} SET status = ?, body = ?, media_type = ? "
                    "WHERE principal = ? AND route = ? AND key = ?",
                    (*_withdrawn_row(), principal, route, key),
                )
        if hit:
            self.scrub()
        return len(hit)

    def scrub(self) -> None:
        """Make the bytes of replaced answers unreadable where the backend can (SQLite: the
        write-ahead log checkpointed and truncated; the file zeroes freed space)."""


def _withdrawn_row() -> tuple[int, bytes, str]:
    return WITHDRAWN.status, WITHDRAWN.body, WITHDRAWN.media_type
