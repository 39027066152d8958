"""Re-asks: the verdict on each answer (:func:`judge_answer`), and what is appended to the
conversation when an answer cannot be used.

An answer that is empty, holds no usable JSON or is rejected by the caller's ``validate`` is
*re-asked* at once (no wait): the bad answer and a short correction are appended to the
conversation, instructor style. A cut-off answer is re-asked for a complete, shorter one.
Re-asks share the one ``max_retries`` budget with the transient retries of
:class:`~memreader.transport.retry.RetryPolicy`: a call sends at most ``max_retries + 1``
requests, whatever went wrong.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from memreader.llms.errors import LLMEmptyResponseError, LLMError, LLMParseError
from memreader.llms.parsing import Expect, parse_json
from memreader.llms.types import LLMResponse, RawCompletion, Validator
from memreader.llms.usage import Usage

__all__ = [
    "cutoff_reask_messages",
    "empty_reask_messages",
    "format_reask_messages",
    "judge_answer",
    "parse_reask_messages",
]

#: How much of a validator's complaint goes into the error and the re-ask.
DETAIL_LIMIT = 500

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


def judge_answer(
    raw: RawCompletion,
    schema: Mapping[str, Any] | None,
    validate: Validator | None,
    *,
    model: str,
    slot: str,
    attempt: int,
    total: Usage,
    started: float,
    may_retry: bool,
) -> LLMResponse | tuple[LLMError, list[dict[str, Any]]]:
    """The response to return for ``raw``, or the problem with it and the re-ask to send.

    ``model`` stands in when the server names none; ``total`` is the usage of the call so far,
    ``started`` its ``perf_counter`` start; ``may_retry`` whether another request may follow
    (a cut-off answer is re-asked only then, and returned as it is otherwise).
    """
    text = raw.text
    cut_off = raw.finish_reason == "length"
    try:
        response = _interpret(raw, text, schema, model, slot, attempt, total, started)
    except LLMParseError as err:
        if cut_off:
            return err, cutoff_reask_messages()
        return err, parse_reask_messages(text, err.reason)
    except LLMEmptyResponseError as err:
        if cut_off:
            return err, cutoff_reask_messages()
        return err, empty_reask_messages(wants_json=schema is not None)
    if schema is None:
        return response
    if response.truncated and may_retry:
        why = "finish_reason=length" if cut_off else "the JSON ends early"
        problem = LLMParseError(f"the answer was cut off ({why})", raw_text=text)
        return problem, cutoff_reask_messages()
    if validate is None:
        return response
    try:
        validated = validate(response.parsed)
    except ValueError as exc:
        detail = str(exc).strip() or type(exc).__name__
        if len(detail) > DETAIL_LIMIT:
            detail = detail[:DETAIL_LIMIT] + "..."
        problem = LLMParseError(
            f"the answer did not match the expected format: {detail}", raw_text=text
        )
        problem.__cause__ = exc
        return problem, format_reask_messages(text, detail)
    return dataclasses.replace(response, validated=validated)


def _interpret(
    raw: RawCompletion,
    text: str,
    schema: Mapping[str, Any] | None,
    model: str,
    slot: str,
    attempt: int,
    total: Usage,
    started: float,
) -> LLMResponse:
    if not text.strip():
        raise LLMEmptyResponseError("the model returned an empty answer")
    parsed: Any = None
    truncated = False
    repairs: tuple[str, ...] = ()
    if schema is not None:
        result = parse_json(text, expect=_expect_for(schema))
        parsed, truncated, repairs = result.value, result.truncated, result.repairs
        truncated = truncated or raw.finish_reason == "length"
    return LLMResponse(
        text=text,
        parsed=parsed,
        usage=total,
        model=raw.model or model,
        attempts=attempt,
        finish_reason=raw.finish_reason,
        slot=slot,
        truncated=truncated,
        repairs=repairs,
        elapsed_s=time.perf_counter() - started,
    )


def _expect_for(schema: Mapping[str, Any]) -> Expect:
    kind = schema.get("type", "object")
    if kind == "array":
        return "array"
    if kind == "object":
        return "object"
    return "any"
