"""Re-asks: what is appended to the conversation when an answer cannot be used.

An answer that is empty, holds no usable JSON or is rejected by the caller's ``validate`` is
*re-asked* at once (no wait): the bad answer and a short correction are appended to the
conversation, instructor style. A cut-off answer is re-asked for a complete, shorter one.
Re-asks share the one ``max_retries`` budget with the transient retries of
:class:`~memreader.transport.retry.RetryPolicy`: a call sends at most ``max_retries + 1``
requests, whatever went wrong.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "cutoff_reask_messages",
    "empty_reask_messages",
    "format_reask_messages",
    "parse_reask_messages",
]

#: The correction appended after an unparseable answer (``{error}`` is the parse error).
PARSE_REASK = "Your last answer was not valid JSON: {error}. Answer again with only the JSON."
#: The correction appended after an answer the caller's ``validate`` rejected.
FORMAT_REASK = (
    "Your answer did not match the expected format: {error}. Answer again with only the JSON."
)
#: The correction appended after a cut-off answer (the bad answer is not echoed: it is long).
CUTOFF_REASK = (
    "Your answer was cut off before it was complete. Answer again with a complete, shorter "
    "answer: fewer and shorter items, only the JSON."
)
#: The correction appended after an empty answer when a schema was requested.
EMPTY_REASK_JSON = "Your last answer was empty. Answer again with only the JSON."
#: The correction appended after an empty answer to a plain-text request.
EMPTY_REASK_TEXT = "Your last answer was empty. Please answer again."
#: How much of a bad answer is echoed back to the model when re-asking.
REASK_ECHO_LIMIT = 4000


def _echo(text: str) -> str:
    if len(text) <= REASK_ECHO_LIMIT:
        return text
    return text[:REASK_ECHO_LIMIT] + "..."


def parse_reask_messages(bad_answer: str, error: str) -> list[dict[str, Any]]:
    """The messages appended after an unparseable answer."""
    return [
        {"role": "assistant", "content": _echo(bad_answer)},
        {"role": "user", "content": PARSE_REASK.format(error=error)},
    ]


def empty_reask_messages(*, wants_json: bool) -> list[dict[str, Any]]:
    """The message appended after an empty answer."""
    return [{"role": "user", "content": EMPTY_REASK_JSON if wants_json else EMPTY_REASK_TEXT}]


def format_reask_messages(bad_answer: str, error: str) -> list[dict[str, Any]]:
    """The messages appended after an answer the caller's ``validate`` rejected."""
    return [
        {"role": "assistant", "content": _echo(bad_answer)},
        {"role": "user", "content": FORMAT_REASK.format(error=error)},
    ]


def cutoff_reask_messages() -> list[dict[str, Any]]:
    """The message appended after a cut-off answer."""
    return [{"role": "user", "content": CUTOFF_REASK}]
