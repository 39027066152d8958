"""The reconcile pass, as a plan: new memories against the stored memories they resemble.

mem0's shape, with memreader's promise that nothing is guessed: the model sees the new memories
numbered ``1..n`` and their stored neighbours numbered ``S1..Sm`` (small numbers it can copy,
never a store id it could invent), and answers one decision per new memory:

- ``ADD``: a new fact; store it.
- ``UPDATE`` ``target``: the same fact as neighbour ``target``, said better or more fully;
  ``memory`` is the merged text, which replaces the neighbour (the neighbour is superseded by
  it, and kept with its history).
- ``SUPERSEDE`` ``target``: the new memory contradicts neighbour ``target`` and is newer (``I
  moved to Porto`` after ``I live in Lisbon``); the neighbour stops holding when the new one
  starts.
- ``NONE`` ``target``: already stored as neighbour ``target``; nothing to write.

A decision that names a neighbour not shown, lacks the target its event needs, has an unknown
event, or is missing, becomes ``ADD`` with the reason saying why: a memory is never dropped or
merged on a guess. A failed call (after the client's re-asks) makes every memory ``ADD``.

>>> read_decisions({"decisions": [{"id": 1, "event": "SUPERSEDE", "target": "S2"}]},
...                new_count=2, neighbour_count=1)[0].reason
'target S2 was not shown; kept as a new memory'
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from memreader.extraction.contract import MAX_VALUE_CHARS, ContractError, clip_text
from memreader.extraction.fine import LLMRequest, short_error
from memreader.extraction.language import Language
from memreader.extraction.prompts import numbered_lines, one_line
from memreader.llms import LLMError, LLMResponse

__all__ = [
    "RECONCILE_SCHEMA",
    "RECONCILE_SYSTEM",
    "Neighbour",
    "ReconcileDecision",
    "ReconcilePlan",
    "read_decisions",
    "reconcile_plan",
]

logger = logging.getLogger(__name__)

ReconcileEvent = Literal["ADD", "UPDATE", "SUPERSEDE", "NONE"]
_EVENTS: dict[str, ReconcileEvent] = {e: e for e in ("ADD", "UPDATE", "SUPERSEDE", "NONE")}
#: The most new memories and neighbours one call shows (the prompt is the cost).
MAX_SHOWN = 64
_MAX_REASON_CHARS = 200

RECONCILE_SYSTEM: dict[Language, str] = {
    "en": (
        "You keep a person's memory consistent. You get NEW memories, numbered 1, 2, ..., and "
        "STORED memories that resemble them, numbered S1, S2, ... with the date each began to "
        "hold. For each new memory decide: ADD (a new fact), UPDATE with target Sk (the same fact "
        "as Sk, said better or more fully: give the merged text in memory), SUPERSEDE with target "
        "Sk (it contradicts Sk and is newer: Sk no longer holds), or NONE with target Sk (Sk "
        "already says it). Only name targets from the list. Each line is one memory (a line "
        "break inside it is written \\n).\n"
        'Answer with JSON: {"decisions": [{"id": new memory number, "event": "ADD" | "UPDATE" | '
        '"SUPERSEDE" | "NONE", "target": "Sk" or null, "memory": merged text for UPDATE, '
        '"reason": a few words}]}.'
    ),
    "zh": (
        "你负责让一个人的记忆保持一致。你会收到编号为 1、2、…… 的新记忆，以及与之相似、编号为 "
        "S1、S2、…… 的已存记忆（附开始成立的日期）。对每条新记忆做出决定：ADD（新事实）；UPDATE "
        "并给出 target Sk（与 Sk 是同一事实、表述更好或更完整：在 memory 中给出合并后的文本）；"
        "SUPERSEDE 并给出 target Sk（与 Sk 矛盾且更新：Sk 不再成立）；NONE 并给出 target Sk（Sk "
        "已经说明了它）。target 只能取列表中的编号。每行是一条记忆（其中的换行写作 \\n）。\n"
        '用 JSON 回答：{"decisions": [{"id": 新记忆编号, "event": "ADD" | "UPDATE" | '
        '"SUPERSEDE" | "NONE", "target": "Sk" 或 null, "memory": UPDATE 时合并后的文本, '
        '"reason": 简短理由}]}。'
    ),
}

RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decisions": {
            "type": "array",
            "maxItems": MAX_SHOWN,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "event": {"type": "string", "enum": sorted(_EVENTS)},
                    "target": {"type": ["string", "null"], "maxLength": 8},
                    "memory": {"type": "string", "maxLength": MAX_VALUE_CHARS},
                    "reason": {"type": "string", "maxLength": _MAX_REASON_CHARS},
                },
                "required": ["id", "event"],
            },
        }
    },
    "required": ["decisions"],
}


@dataclass(frozen=True)
class Neighbour:
    """A stored memory shown to the model: its text and when it began to hold."""

    memory_id: str
    text: str
    valid_from: str | None = None


@dataclass(frozen=True)
class ReconcileDecision:
    """What to do with one new memory: ``target`` is the index of the neighbour it names (in
    the list the plan was given), ``memory`` the merged text of an ``UPDATE``."""

    event: ReconcileEvent
    reason: str
    target: int | None = None
    memory: str | None = None


ReconcilePlan = Generator[LLMRequest, LLMResponse, list[ReconcileDecision]]


def reconcile_plan(
    new: Sequence[str], neighbours: Sequence[Neighbour], language: Language
) -> ReconcilePlan:
    """One call deciding each of ``new`` against ``neighbours`` (see the module docstring).

    Without neighbours there is nothing to reconcile: every memory is ``ADD`` and no call is
    made. Never raises for the model's failure.
    """
    if not new:
        return []
    if not neighbours:
        return [ReconcileDecision("ADD", "no stored memory resembles it") for _ in new]
    shown_new, shown_old = new[:MAX_SHOWN], neighbours[:MAX_SHOWN]
    try:
        response = yield LLMRequest(
            "general_llm",
            reconcile_messages(shown_new, shown_old, language),
            RECONCILE_SCHEMA,
            "memory_reconcile",
            validate=partial(
                read_decisions, new_count=len(shown_new), neighbour_count=len(shown_old)
            ),
        )
        decisions: list[ReconcileDecision] = response.validated
    except LLMError as exc:
        logger.warning("reconcile failed, adding the memories as new: %s", short_error(exc))
        reason = f"reconcile failed ({short_error(exc, 120)}); kept as a new memory"
        return [ReconcileDecision("ADD", reason) for _ in new]
    unshown = [ReconcileDecision("ADD", "not shown to the model (too many in one window)")]
    return decisions + unshown * (len(new) - len(shown_new))


def reconcile_messages(
    new: Sequence[str], neighbours: Sequence[Neighbour], language: Language
) -> list[dict[str, str]]:
    """The chat messages of a reconcile call: the stored neighbours, then the new memories."""
    stored = "\n".join(
        f"[S{i + 1}] ({n.valid_from or '?'}) {one_line(n.text)}" for i, n in enumerate(neighbours)
    )
    heading = (
        ("STORED memories:", "NEW memories:") if language == "en" else ("已存记忆：", "新记忆：")
    )
    fresh = numbered_lines([(i + 1, text) for i, text in enumerate(new)])
    body = f"{heading[0]}\n{stored}\n\n{heading[1]}\n{fresh}"
    return [
        {"role": "system", "content": RECONCILE_SYSTEM[language]},
        {"role": "user", "content": body},
    ]


def read_decisions(parsed: Any, *, new_count: int, neighbour_count: int) -> list[ReconcileDecision]:
    """One decision per new memory, in order, from a reconcile answer.

    Raises:
        ContractError: the answer is not an object with a ``decisions`` list (the client
            re-asks the model); anything else wrong with one decision makes it ``ADD``.
    """
    raw = parsed.get("decisions") if isinstance(parsed, Mapping) else None
    if not isinstance(raw, list):
        raise ContractError('the answer must be a JSON object with a "decisions" list')
    decided: dict[int, ReconcileDecision] = {}
    for entry in raw:
        number = entry.get("id") if isinstance(entry, Mapping) else None
        if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= new_count:
            decided.setdefault(number, _read_one(entry, neighbour_count))
    missing = ReconcileDecision("ADD", "the model gave no decision; kept as a new memory")
    return [decided.get(n, missing) for n in range(1, new_count + 1)]


def _read_one(entry: Mapping[str, Any], neighbour_count: int) -> ReconcileDecision:
    given = entry.get("event")
    event = _EVENTS.get(given.strip().upper()) if isinstance(given, str) else None
    if event is None:
        return ReconcileDecision("ADD", f"unknown event {_short(given)}; kept as a new memory")
    reason = _short(entry.get("reason")) if entry.get("reason") is not None else "no reason given"
    if event == "ADD":
        return ReconcileDecision("ADD", f"model: {reason}")
    target = _target(entry.get("target"), neighbour_count)
    if target is None:
        shown = _short(entry.get("target"))
        why = "no target" if entry.get("target") is None else f"target {shown} was not shown"
        return ReconcileDecision("ADD", f"{why}; kept as a new memory")
    if event == "UPDATE":
        text = entry.get("memory")
        if not isinstance(text, str) or not text.strip():
            return ReconcileDecision("ADD", "UPDATE without the merged memory; kept as new")
        merged, _ = clip_text(text.strip(), MAX_VALUE_CHARS)
        return ReconcileDecision("UPDATE", f"model: {reason}", target, merged)
    return ReconcileDecision(event, f"model: {reason}", target)


def _target(value: Any, neighbour_count: int) -> int | None:
    """The index of neighbour ``Sk`` (``"S2"``, ``"s2"``, ``2``), or None when not shown."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().upper().removeprefix("S")
        if not text.isdigit():
            return None
        value = int(text)
    if isinstance(value, int) and 1 <= value <= neighbour_count:
        return value - 1
    return None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return one_line(text)[:_MAX_REASON_CHARS]
