"""Fine extraction of one window, as plans of LLM calls: extract, filter, rewrite.

Each pass over a window is written once, as a generator that yields the LLM requests it needs
and receives their answers (or has the call's error thrown into it). :func:`run_plan` drives a
plan with blocking calls and :func:`arun_plan` with awaitables, so sync and async readers share
every decision; :mod:`memreader.extraction.driver` runs the plans of many windows at once. A plan
never raises for a model's failure: a failed extraction becomes a fallback outcome (the raw
window), and a failed filter or rewrite keeps the memories as they were.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from memreader.errors import LLMRequiredError
from memreader.extraction.contract import (
    FILTER_SCHEMA,
    MAX_VALUE_CHARS,
    REWRITE_SCHEMA,
    CategoryMenu,
    ContractError,
    ExtractedMemory,
    Extraction,
    clip_text,
    extraction_schema,
    read_extraction,
    read_results,
)
from memreader.extraction.language import Language
from memreader.extraction.prompts import (
    FILTER_SYSTEM,
    REWRITE_SYSTEM,
    USER_ONLY,
    check_messages,
    extraction_messages,
)
from memreader.llms import (
    LLMCallBlocked,
    LLMEmptyResponseError,
    LLMError,
    LLMParseError,
    LLMResponse,
    LLMRouter,
    LLMTimeoutError,
    UsageMeter,
)

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMRequest:
    """One call a plan needs.

    ``validate`` checks the parsed answer; a ``ValueError`` from it makes the client re-ask the
    model with the error (within ``max_retries``), and its result is ``LLMResponse.validated``.
    ``profile``: the profile of ``llm_profiles`` that answers instead of the slot's config (set
    by the chain for a pass that picks one).
    """

    slot: str
    messages: list[dict[str, Any]]
    schema: dict[str, Any]
    schema_name: str
    validate: Callable[[Any], Any] | None = None
    profile: str | None = None


@dataclass
class PassStatus:
    """How a filter or rewrite pass went: ``"ok"``, ``"skipped"`` or ``"failed"``."""

    status: str = "skipped"
    error: str | None = None
    changed: int = 0


@dataclass
class WindowOutcome:
    """What a window's plan produced. ``memories`` is ``None`` for a fallback."""

    memories: list[ExtractedMemory] | None
    summary: str = ""
    fallback_reason: str | None = None
    error: str | None = None
    truncated: bool = False
    extraction_attempts: int = 0
    over_limit: int = 0
    filter: PassStatus = field(default_factory=PassStatus)
    rewrite: PassStatus = field(default_factory=PassStatus)


@dataclass(frozen=True)
class WindowInput:
    """What a plan reads: numbered lines (number, text), and the role of each number;
    ``categories``: the categories the extraction prompt offers (``None``: none, and the
    answer's ``categories`` are ignored); ``slot``: the LLM slot the extraction asks
    (``document_parser_llm`` for a document's window where that slot is set)."""

    lines: list[tuple[int, str]]
    roles: dict[int, str | None]
    language: Language
    custom_tags: Sequence[str] = ()
    categories: CategoryMenu | None = None
    slot: str = "llm"


def fallback_reason(error: BaseException) -> str:
    """The tag suffix of a fallback caused by ``error``."""
    if isinstance(error, LLMParseError | ContractError):
        return "parse_error"
    if isinstance(error, LLMEmptyResponseError):
        return "empty_response"
    if isinstance(error, LLMTimeoutError):
        return "timeout"
    if isinstance(error, LLMCallBlocked):
        return "blocked"
    if isinstance(error, LLMError):
        return "llm_error"
    return "internal_error"


def failed_outcome(error: BaseException) -> WindowOutcome:
    """The outcome of a window whose plan could not finish: its raw window stands in."""
    return WindowOutcome(None, fallback_reason=fallback_reason(error), error=short_error(error))


ExtractPlan = Generator[LLMRequest, LLMResponse, WindowOutcome]
PassPlan = Generator[LLMRequest, LLMResponse, PassStatus]
#: Any plan: what :func:`run_plan` drives.
Plan = Generator[LLMRequest, LLMResponse, Any]


def extract_plan(window: WindowInput, prompts: Mapping[Language, str] | None = None) -> ExtractPlan:
    """The extraction call of one window and what it yields (see the module docstring);
    ``prompts`` replaces the system prompt (same contract)."""
    valid_ids = [n for n, _ in window.lines]
    try:
        response = yield LLMRequest(
            window.slot,
            extraction_messages(
                window.language, window.lines, window.custom_tags, prompts, window.categories
            ),
            extraction_schema(window.categories),
            "memory_extraction",
            validate=partial(read_extraction, valid_ids=valid_ids, menu=window.categories),
        )
        extraction: Extraction = response.validated
    except LLMError as exc:
        logger.warning("extraction failed, keeping the raw window: %s", short_error(exc))
        return failed_outcome(exc)
    return WindowOutcome(
        extraction.memories,
        summary=extraction.summary,
        truncated=response.truncated,
        extraction_attempts=response.attempts,
        over_limit=extraction.over_limit,
    )


def _numbered(memories: Sequence[ExtractedMemory]) -> list[tuple[int, str]]:
    return [(i + 1, m.value) for i, m in enumerate(memories)]


def evidence_lines(
    lines: Sequence[tuple[int, str]], memories: Sequence[ExtractedMemory]
) -> list[tuple[int, str]]:
    """The lines the filter and the rewrite are shown: those that ``memories`` cite, with
    their window numbers, in window order. The other lines are what no memory came from
    (greetings, small talk, replies nothing was taken from), and resending them doubled the
    cost of each pass. A memory that cites nothing (its ``source_ids`` named no line of the
    window) is checked against the whole window, as its item's provenance is.

    >>> from memreader.items import MemoryType
    >>> lines = [(1, "user: hi"), (2, "user: I live in Porto"), (3, "assistant: nice")]
    >>> porto = ExtractedMemory("home", "Ana lives in Porto.", MemoryType.USER, [], [2])
    >>> evidence_lines(lines, [porto])
    [(2, 'user: I live in Porto')]
    >>> len(evidence_lines(lines, [porto, ExtractedMemory("x", "y", MemoryType.USER, [], [])]))
    3
    """
    if any(not m.source_ids for m in memories):
        return list(lines)
    cited = {n for m in memories for n in m.source_ids}
    return [(n, text) for n, text in lines if n in cited]


def filter_plan(window: WindowInput, outcome: WindowOutcome) -> PassPlan:
    """The hallucination filter of one window's memories, checked against the lines they cite
    (:func:`evidence_lines`): drops those the model marks unsupported (omission keeps a
    memory); on failure keeps them all."""
    if not outcome.memories:
        return PassStatus("skipped")
    memories = outcome.memories
    lines = evidence_lines(window.lines, memories)
    try:
        response = yield LLMRequest(
            "general_llm",
            check_messages(
                FILTER_SYSTEM[window.language], lines, _numbered(memories), window.language
            ),
            FILTER_SCHEMA,
            "memory_filter",
            validate=read_results,
        )
        results: list[dict[str, Any]] = response.validated
    except LLMError as exc:
        logger.warning("hallucination filter failed, keeping all memories: %s", short_error(exc))
        return PassStatus("failed", short_error(exc))
    # Only an explicit "not supported" drops a memory: omission keeps it.
    unsupported = {r["id"] for r in results if r.get("supported") is False}
    kept = [m for i, m in enumerate(memories) if i + 1 not in unsupported]
    dropped = len(memories) - len(kept)
    outcome.memories = kept
    return PassStatus("ok", changed=dropped)


def rewrite_plan(window: WindowInput, outcome: WindowOutcome, *, user_only: bool) -> PassPlan:
    """The rewrite of one window's memories (names for pronouns, absolute dates), from the
    lines they cite (:func:`evidence_lines`: the names and times of every memory's messages);
    with ``user_only`` only the user's messages among them count as evidence. On failure keeps
    them as they were."""
    if not outcome.memories:
        return PassStatus("skipped")
    memories = outcome.memories
    system = REWRITE_SYSTEM[window.language] + (USER_ONLY[window.language] if user_only else "")
    lines = evidence_lines(window.lines, memories)
    if user_only:
        lines = [(n, text) for n, text in lines if window.roles.get(n) == "user"]
        if not lines:
            return PassStatus("skipped")
    try:
        response = yield LLMRequest(
            "general_llm",
            check_messages(system, lines, _numbered(memories), window.language),
            REWRITE_SCHEMA,
            "memory_rewrite",
            validate=read_results,
        )
        results: list[dict[str, Any]] = response.validated
    except LLMError as exc:
        logger.warning("rewrite failed, keeping memories as extracted: %s", short_error(exc))
        return PassStatus("failed", short_error(exc))
    changed = 0
    for result in results:
        index = result["id"] - 1
        value = result.get("value")
        text = value.strip() if isinstance(value, str) else ""
        if 0 <= index < len(memories) and text and text != memories[index].value:
            memory = memories[index]
            memory.value, clipped = clip_text(text, MAX_VALUE_CHARS)
            if clipped and "value_clipped" not in memory.repairs:
                memory.repairs.append("value_clipped")
            changed += 1
    return PassStatus("ok", changed=changed)


def _routing(request: LLMRequest, deadline: Deadline | None) -> dict[str, Any]:
    """The router's optional arguments of ``request``: only those set, so a router written
    before them still works."""
    extra: dict[str, Any] = {}
    if request.profile is not None:
        extra["profile"] = request.profile
    if deadline is not None:
        extra["deadline"] = deadline
    return extra


def short_error(error: BaseException, limit: int = 300) -> str:
    """``Type: message`` of ``error``, clipped for reports and logs."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_plan(
    plan: Plan,
    router: LLMRouter | None,
    meter: UsageMeter | None = None,
    deadline: Deadline | None = None,
) -> Any:
    """Drive ``plan`` with blocking LLM calls. Whatever a call raises is thrown into the plan
    (a plan handles :class:`LLMError`; anything else ends it, for its caller to record).
    ``deadline``: the read's, shown to the LLM interceptors (a rate limit waits within it)."""
    try:
        request = next(plan)
        while True:
            try:
                if router is None:
                    raise LLMRequiredError("this step asks an LLM, and the reader has none set")
                response = router.complete(
                    request.slot,
                    request.messages,
                    schema=request.schema,
                    schema_name=request.schema_name,
                    meter=meter,
                    validate=request.validate,
                    **_routing(request, deadline),
                )
            except Exception as exc:  # handed to the plan, which knows what it means
                request = plan.throw(exc)
            else:
                request = plan.send(response)
    except StopIteration as stop:
        return stop.value


async def arun_plan(
    plan: Plan,
    router: LLMRouter | None,
    meter: UsageMeter | None = None,
    deadline: Deadline | None = None,
) -> Any:
    """Drive ``plan`` with async LLM calls (see :func:`run_plan`)."""
    try:
        request = next(plan)
        while True:
            try:
                if router is None:
                    raise LLMRequiredError("this step asks an LLM, and the reader has none set")
                response = await router.acomplete(
                    request.slot,
                    request.messages,
                    schema=request.schema,
                    schema_name=request.schema_name,
                    meter=meter,
                    validate=request.validate,
                    **_routing(request, deadline),
                )
            except Exception as exc:  # handed to the plan, which knows what it means
                request = plan.throw(exc)
            else:
                request = plan.send(response)
    except StopIteration as stop:
        return stop.value
