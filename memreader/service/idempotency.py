"""``Idempotency-Key`` on writes: a retried request gets the first answer, and nothing is
written twice.

A key names one request: its method, path, query and body (:class:`KeyedRequest`). An answer
is kept per (API key, ``Idempotency-Key``) with the digest of that request, for ``ttl_s``
seconds and at most ``max_entries`` answers (the oldest go first). A retry of the same request
gets the kept answer (header ``Idempotent-Replayed: true``); the key sent with anything else
(another memory's path, ``?erase=true``, another user, another route, another body) is 422;
one while the first is still running is 409 (retry later). Answers live in the service's
shared state (:mod:`memreader.service.shared`): a retry that reaches another worker or replica
gets the same answer; with an in-memory state, a retried write after a restart runs again,
and the store's own idempotence (the same items give ``NONE`` events, the same update of a
memory is ``NONE`` once applied) keeps it from writing anything twice. A kept answer that
holds text erased since is withdrawn (:meth:`IdempotencyCache.withdraw`): a retry gets 410.

>>> a = KeyedRequest("DELETE", "/v1/memories/x", "erase=true&user_id=u", b"")
>>> b = KeyedRequest("DELETE", "/v1/memories/x", "user_id=u&erase=true", b"")
>>> other = KeyedRequest("DELETE", "/v1/memories/y", "erase=true&user_id=u", b"")
>>> a.digest() == b.digest(), a.digest() == other.digest()
(True, False)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

from memreader.service.problems import ProblemError
from memreader.service.shared import SharedState, StoredAnswer

__all__ = ["IdempotencyCache", "KeyedRequest", "StoredAnswer"]

MAX_KEY_CHARS = 255
#: The one scope of every key's record: a key names one request, whatever its route.
_SCOPE = "request"


@dataclass(frozen=True)
class KeyedRequest:
    """What an ``Idempotency-Key`` is bound to: the request's method, path, query (its
    parameters in any order) and body."""

    method: str
    path: str
    query: str
    body: bytes

    def digest(self) -> str:
        """The SHA-256 naming this request (hex)."""
        head = json.dumps(
            [self.method.upper(), self.path, sorted(parse_qsl(self.query, keep_blank_values=True))]
        )
        return hashlib.sha256(head.encode() + b"\n" + self.body).hexdigest()


class IdempotencyCache:
    """The kept answers, in ``shared`` (default: this process's memory)."""

    def __init__(self, ttl_s: float, max_entries: int, shared: SharedState | None = None) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        if shared is None:
            from memreader.service.shared.sqlite import SqliteSharedState

            shared = SqliteSharedState(":memory:").start()
        self.shared = shared

    def begin(self, principal: str, key: str, request: KeyedRequest) -> StoredAnswer | None:
        """The kept answer of a retry, or ``None`` when this request is the first (it must
        then :meth:`finish` or :meth:`abandon`).

        Raises:
            ProblemError: 400 for a bad key, 422 when the key came with another request, 409
                while the first request with the key is still running.
        """
        if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
            raise ProblemError(
                400,
                "bad-idempotency-key",
                "Bad Idempotency-Key",
                f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable characters",
            )
        verdict = self.shared.idem_begin(
            (principal, _SCOPE, key), request.digest(), self.ttl_s, self.max_entries
        )
        if verdict.kind == "mismatch":
            raise ProblemError(
                422,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this Idempotency-Key was first sent with another request (its method, path, "
                "query or body differ); a key names one request: use a new key for a new one",
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

    def finish(self, principal: str, key: str, answer: StoredAnswer) -> None:
        """Keep ``answer`` for retries."""
        self.shared.idem_finish((principal, _SCOPE, key), answer)

    def abandon(self, principal: str, key: str) -> None:
        """Forget a request that failed before it changed anything, so a retry runs it."""
        self.shared.idem_abandon((principal, _SCOPE, key))

    def withdraw(self, texts: Sequence[str]) -> int:
        """Withdraw every kept answer holding one of ``texts`` (erased memories' ids and
        words), as sent (UTF-8) or JSON-escaped; how many were withdrawn."""
        needles: list[bytes] = []
        for text in texts:
            if text:
                needles.append(text.encode("utf-8"))
                needles.append(json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))
                needles.append(json.dumps(text)[1:-1].encode("ascii"))
        return self.shared.idem_withdraw(needles)
