"""Errors as RFC 9457 problem documents (``application/problem+json``).

Every failure a request can meet leaves as a problem with a status, a ``type`` naming the
kind, a ``detail`` a person can act on and, for input errors, where the input was wrong
(``scene_index``, ``message_index``, ``part_index``); never as a traceback.

>>> from memreader.errors import InvalidMessageError
>>> problem_for(InvalidMessageError("no role", scene_index=0, message_index=2)).body()["status"]
422
>>> problem_for(StoreError("locked")).status
503

Whatever a client sent comes back capped (:func:`shown`: 200 characters of a value; a
``detail`` of at most 1,000, an ``instance`` of 200, at most 50 entries of a list), so a huge
id cannot make a huge answer.

>>> shown("x" * 500)[-6:]
"xxxx…'"
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from memreader.errors import (
    ConfigError,
    ConflictError,
    DeadlineExceeded,
    EmbeddingError,
    ForbiddenScopeError,
    InputError,
    InternalError,
    MemReaderError,
    StoreError,
    UnknownMemoryError,
    UnsupportedModeError,
)
from memreader.service.redact import PathScrub

__all__ = ["PROBLEM_TYPE", "ProblemError", "capped", "problem_for", "problem_response", "shown"]

logger = logging.getLogger(__name__)

PROBLEM_TYPE = "application/problem+json"
_TYPE_PREFIX = "urn:memreader:problem:"
#: The most characters of one value a client sent that an answer repeats.
ECHO_CHARS = 200
_DETAIL_CHARS = 1000
_LIST_ITEMS = 50


def capped(text: str, limit: int = ECHO_CHARS) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` for a message, with a string value cut to ``limit`` characters."""
    if isinstance(value, str):
        return repr(capped(value, limit))
    return capped(repr(value), limit)


def _bounded(value: Any) -> Any:
    """A JSON-ready value with every string and list capped (the members of a problem)."""
    if isinstance(value, str):
        return capped(value)
    if isinstance(value, dict):
        return {capped(str(k)): _bounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded(v) for v in value[:_LIST_ITEMS]]
    return value


class ProblemError(Exception):
    """A request's failure, as the problem document it answers with.

    ``kind`` becomes the ``type`` (``urn:memreader:problem:<kind>``); ``extra`` adds members
    (the error's location, the invalid fields); ``headers`` go on the response
    (``Retry-After``, ``WWW-Authenticate``).
    """

    def __init__(
        self,
        status: int,
        kind: str,
        title: str,
        detail: str,
        *,
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.kind = kind
        self.title = title
        self.detail = detail
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})

    def body(self, instance: str | None = None) -> dict[str, Any]:
        """The problem document."""
        body: dict[str, Any] = {
            "type": _TYPE_PREFIX + self.kind,
            "title": self.title,
            "status": self.status,
            "detail": capped(self.detail, _DETAIL_CHARS),
        }
        if instance is not None:
            body["instance"] = capped(instance)
        body.update(_bounded(self.extra))
        return body


#: A library error's words may name server files (a store's, a document's): by name only.
_NO_PATHS = PathScrub({})


def _said(error: BaseException) -> str:
    """``error``'s message without absolute server paths (their file names stay)."""
    return _NO_PATHS.text(str(error))


def problem_response(problem: ProblemError, instance: str | None = None) -> Response:
    """``problem`` as a response."""
    # A value a client sent may not be encodable (a lone surrogate): escaped, never a 500.
    text = json.dumps(problem.body(instance), ensure_ascii=False)
    return Response(
        text.encode("utf-8", "backslashreplace"),
        status_code=problem.status,
        media_type=PROBLEM_TYPE,
        headers=problem.headers,
    )


def problem_for(error: BaseException) -> ProblemError:
    """The problem a library error (or any other exception) answers with."""
    if isinstance(error, ProblemError):
        return error
    name = type(error).__name__
    if isinstance(error, UnknownMemoryError):
        return ProblemError(404, "not-found", "No such memory", _said(error), extra={"error": name})
    if isinstance(error, ConflictError):  # another change won: read again, decide anew
        return ProblemError(409, "conflict", "Conflict", _said(error), extra={"error": name})
    if isinstance(error, ForbiddenScopeError):
        return ProblemError(
            403, "forbidden-scope", "Scope not allowed", _said(error), extra={"error": name}
        )
    if isinstance(error, InputError):
        where = {
            key: value
            for key in ("scene_index", "message_index", "part_index")
            if (value := getattr(error, key)) is not None
        }
        return ProblemError(
            422, "invalid-input", "Invalid input", _said(error), extra={"error": name, **where}
        )
    if isinstance(error, UnsupportedModeError):
        return ProblemError(
            422,
            "unsupported",
            "Not available with this reader",
            _said(error),
            extra={"error": name},
        )
    if isinstance(error, ConfigError):
        return ProblemError(
            422, "invalid-config", "Invalid settings", _said(error), extra={"error": name}
        )
    if isinstance(error, StoreError):
        return ProblemError(
            503,
            "store-unavailable",
            "Memory store failed",
            _said(error),
            extra={"error": name},
            headers={"Retry-After": "1"},
        )
    if isinstance(error, DeadlineExceeded):
        # The work stopped at its deadline: nothing it was writing was stored.
        return ProblemError(
            504, "deadline", "Deadline exceeded", _said(error), extra={"error": name}
        )
    if isinstance(error, EmbeddingError):
        return ProblemError(
            503, "embedder-unavailable", "Embedder failed", _said(error), extra={"error": name}
        )
    if isinstance(error, MemReaderError) and not isinstance(error, InternalError):
        return ProblemError(
            500, "reader-error", "Reader failed", _said(error), extra={"error": name}
        )
    # A bug: logged with its traceback here, answered without one.
    logger.error("internal error", exc_info=error)
    return ProblemError(
        500,
        "internal",
        "Internal error",
        "the service failed unexpectedly; the log has the details",
    )
