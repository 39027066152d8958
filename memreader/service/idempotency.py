"""``Idempotency-Key`` on writes: a retried request gets the first answer, and nothing is
written twice.

An answer is kept per (API key, route, ``Idempotency-Key``) with a digest of the request body,
for ``ttl_s`` seconds and at most ``max_entries`` answers (the oldest go first). A retry with
the same body gets the kept answer (header ``Idempotent-Replayed: true``); one with another
body is 422; one while the first is still running is 409 (retry later). Answers live in the
service's shared state (:mod:`memreader.service.shared`): a retry that reaches another worker
or replica gets the same answer; with an in-memory state, a retried write after a restart runs
again, and the store's own idempotence (the same items give ``NONE`` events) keeps it from
writing anything twice.
"""

from __future__ import annotations

import hashlib

from memreader.service.problems import ProblemError
from memreader.service.shared import SharedState, StoredAnswer

__all__ = ["IdempotencyCache", "StoredAnswer"]

MAX_KEY_CHARS = 255


class IdempotencyCache:
    """The kept answers, in ``shared`` (default: this process's memory)."""

    def __init__(self, ttl_s: float, max_entries: int, shared: SharedState | None = None) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        if shared is None:
            from memreader.service.shared.sqlite import SqliteSharedState

            shared = SqliteSharedState(":memory:").start()
        self.shared = shared

    def begin(self, principal: str, route: str, key: str, body: bytes) -> StoredAnswer | None:
        """The kept answer of a retry, or ``None`` when this request is the first (it must
        then :meth:`finish` or :meth:`abandon`).

        Raises:
            ProblemError: 400 for a bad key, 422 when the key came with another body, 409
                while the first request with the key is still running.
        """
        if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
            raise ProblemError(
                400,
                "bad-idempotency-key",
                "Bad Idempotency-Key",
                f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable characters",
            )
        digest = hashlib.sha256(body).hexdigest()
        verdict = self.shared.idem_begin(
            (principal, route, key), digest, self.ttl_s, self.max_entries
        )
        if verdict.kind == "mismatch":
            raise ProblemError(
                422,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this Idempotency-Key was used with a different request body; use a new "
                "key for a new request",
            )
        if verdict.kind == "running":
            raise ProblemError(
                409,
                "request-in-progress",
                "Request in progress",
                "the first request with this Idempotency-Key is still running; retry "
                "when it has answered",
                headers={"Retry-After": "1"},
            )
        return verdict.answer

    def finish(self, principal: str, route: str, key: str, answer: StoredAnswer) -> None:
        """Keep ``answer`` for retries."""
        self.shared.idem_finish((principal, route, key), answer)

    def abandon(self, principal: str, route: str, key: str) -> None:
        """Forget a request that failed before it changed anything, so a retry runs it."""
        self.shared.idem_abandon((principal, route, key))
