"""The extra fine passes over one window, as plans of LLM calls: tool trajectories, preferences
and skills; their JSON contracts and the repair of their answers.

Each plan yields its request and returns a :class:`PassOutcome`; like the filter and rewrite, a
plan never raises for the model's failure: the outcome says ``failed`` and the other passes'
memories are untouched. Answers are repaired the way extraction answers are: entries without
the text they need are dropped, cited numbers that name no line of the window are removed, long
texts are clipped and each repair is recorded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memreader.extraction.agent_prompts import (
    PREFERENCE_SYSTEM,
    SKILL_SYSTEM,
    TOOL_SYSTEM,
    pass_messages,
)
from memreader.extraction.contract import MAX_MEMORIES, ContractError, clip_text
from memreader.extraction.fine import LLMRequest, WindowInput, short_error
from memreader.llms import LLMError, LLMResponse

__all__ = [
    "PREFERENCE_SCHEMA",
    "SKILL_SCHEMA",
    "TOOL_SCHEMA",
    "PassOutcome",
    "Preference",
    "SkillDraft",
    "Trajectory",
    "preference_plan",
    "read_preferences",
    "read_skills",
    "read_trajectories",
    "skill_plan",
    "tool_plan",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
MAX_TEXT = 1000
MAX_SHORT = 200
MAX_LIST = 20


def _schema(key: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {
            **properties,
            "source_ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 64},
        },
        "required": [*required, "source_ids"],
    }
    return {
        "type": "object",
        "properties": {key: {"type": "array", "maxItems": MAX_MEMORIES, "items": item}},
        "required": [key],
    }


_TEXT = {"type": "string", "maxLength": MAX_TEXT}
_SHORT = {"type": "string", "maxLength": MAX_SHORT}
_LIST = {"type": "array", "items": _SHORT, "maxItems": MAX_LIST}

TOOL_SCHEMA = _schema(
    "trajectories",
    {
        "task": _SHORT,
        "tool": _SHORT,
        "arguments": _TEXT,
        "outcome": {"type": "string", "enum": ["success", "failure", "unknown"]},
        "result": _TEXT,
        "lesson": _TEXT,
    },
    ["task", "tool", "outcome", "lesson"],
)
PREFERENCE_SCHEMA = _schema(
    "preferences",
    {
        "preference": _TEXT,
        "kind": {"type": "string", "enum": ["explicit", "implicit"]},
        "topic": _SHORT,
    },
    ["preference", "kind"],
)
SKILL_SCHEMA = _schema(
    "skills",
    {"name": _SHORT, "description": _TEXT, "steps": _LIST, "inputs": _LIST, "tools": _LIST},
    ["name", "description", "steps"],
)


@dataclass
class Trajectory:
    """One attempt to use a tool, as the model read it."""

    task: str
    tool: str
    arguments: str
    outcome: str
    result: str
    lesson: str
    source_ids: list[int]
    repairs: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The memory: what was tried, with which arguments, how it went, and the lesson."""
        text = f"{self.task}: called {self.tool}"
        text += f" with {self.arguments}" if self.arguments else ""
        text += f"; {self.outcome}"
        text += f": {self.result}" if self.result else ""
        return text + (f". Lesson: {self.lesson}" if self.lesson else ".")


@dataclass
class Preference:
    """One preference of the user: ``explicit`` (stated) or ``implicit`` (a repeated choice)."""

    preference: str
    kind: str
    topic: str
    source_ids: list[int]
    repairs: list[str] = field(default_factory=list)


@dataclass
class SkillDraft:
    """A reusable procedure the model distilled from successful tool use."""

    name: str
    description: str
    steps: list[str]
    inputs: list[str]
    tools: list[str]
    source_ids: list[int]
    repairs: list[str] = field(default_factory=list)


@dataclass
class PassOutcome(Generic[T]):
    """What a pass made of one window: its entries, and ``ok``, ``failed`` or ``skipped``."""

    entries: list[T] = field(default_factory=list)
    status: str = "ok"
    error: str | None = None


# -- contracts ----------------------------------------------------------------------------------


def _entries(
    parsed: Any,
    key: str,
    valid_ids: Sequence[int],
    make: Callable[[Mapping[str, Any], list[int], list[str]], T | None],
) -> list[T]:
    """The usable entries of ``parsed[key]``; a :class:`ContractError` (the model is asked
    again) when there is no such list or none of a non-empty list is usable."""
    if not isinstance(parsed, Mapping):
        raise ContractError(f'expected a JSON object with a "{key}" list')
    raw = parsed.get(key)
    if not isinstance(raw, list):
        raise ContractError(f'the answer has no "{key}" list')
    valid = set(valid_ids)
    entries = []
    for item in raw[:MAX_MEMORIES]:
        if not isinstance(item, Mapping):
            continue
        repairs: list[str] = []
        ids = item.get("source_ids", [])
        ids = ids if isinstance(ids, list) else [ids]
        numbers = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
        cited = [i for i in dict.fromkeys(numbers) if i in valid]
        if len(cited) != len(ids):
            repairs.append("source_ids")
        entry = make(item, cited, repairs)
        if entry is not None:
            entries.append(entry)
    if raw and not entries:
        raise ContractError(f'none of the {len(raw)} entries of "{key}" has the fields it needs')
    return entries


def _text(item: Mapping[str, Any], name: str, limit: int, repairs: list[str]) -> str:
    value = item.get(name)
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, str):
        return ""
    text, clipped = clip_text(" ".join(value.split()), limit)
    if clipped:
        repairs.append("clipped")
    return text


def _strings(item: Mapping[str, Any], name: str, repairs: list[str]) -> list[str]:
    value = item.get(name)
    if not isinstance(value, list):
        return []
    texts = [clip_text(" ".join(v.split()), MAX_SHORT)[0] for v in value if isinstance(v, str)]
    texts = [t for t in texts if t]
    if len(texts) != len(value) or len(texts) > MAX_LIST:
        repairs.append(name)
    return texts[:MAX_LIST]


def _trajectory(item: Mapping[str, Any], cited: list[int], repairs: list[str]) -> Trajectory | None:
    tool = _text(item, "tool", MAX_SHORT, repairs)
    lesson = _text(item, "lesson", MAX_TEXT, repairs)
    if not tool:
        return None
    outcome = item.get("outcome")
    if outcome not in ("success", "failure", "unknown"):
        repairs.append("outcome")
        outcome = "unknown"
    return Trajectory(
        task=_text(item, "task", MAX_SHORT, repairs) or tool,
        tool=tool,
        arguments=_text(item, "arguments", MAX_TEXT, repairs),
        outcome=str(outcome),
        result=_text(item, "result", MAX_TEXT, repairs),
        lesson=lesson,
        source_ids=cited,
        repairs=repairs,
    )


def _preference(item: Mapping[str, Any], cited: list[int], repairs: list[str]) -> Preference | None:
    text = _text(item, "preference", MAX_TEXT, repairs)
    if not any(ch.isalnum() for ch in text):
        return None
    kind = item.get("kind")
    if kind not in ("explicit", "implicit"):
        repairs.append("kind")
        kind = "explicit"
    return Preference(text, str(kind), _text(item, "topic", MAX_SHORT, repairs), cited, repairs)


def _skill(item: Mapping[str, Any], cited: list[int], repairs: list[str]) -> SkillDraft | None:
    name = _text(item, "name", MAX_SHORT, repairs)
    steps = _strings(item, "steps", repairs)
    if not name or not steps:
        return None
    return SkillDraft(
        name=name,
        description=_text(item, "description", MAX_TEXT, repairs),
        steps=steps,
        inputs=_strings(item, "inputs", repairs),
        tools=_strings(item, "tools", repairs),
        source_ids=cited,
        repairs=repairs,
    )


def read_trajectories(parsed: Any, valid_ids: Sequence[int]) -> list[Trajectory]:
    """The tool pass's answer, repaired (see the module docstring)."""
    return _entries(parsed, "trajectories", valid_ids, _trajectory)


def read_preferences(parsed: Any, valid_ids: Sequence[int]) -> list[Preference]:
    """The preference pass's answer, repaired."""
    return _entries(parsed, "preferences", valid_ids, _preference)


def read_skills(parsed: Any, valid_ids: Sequence[int]) -> list[SkillDraft]:
    """The skill pass's answer, repaired."""
    return _entries(parsed, "skills", valid_ids, _skill)


# -- plans --------------------------------------------------------------------------------------

PassPlan = Generator[LLMRequest, LLMResponse, PassOutcome[T]]


def _plan(
    window: WindowInput,
    *,
    slot: str,
    system: str,
    schema: dict[str, Any],
    name: str,
    read: Callable[[Any, Sequence[int]], list[T]],
    extra: Sequence[str] = (),
) -> PassPlan[T]:
    valid_ids = [n for n, _ in window.lines]
    try:
        response = yield LLMRequest(
            slot,
            pass_messages(system, window.lines, window.language, extra),
            schema,
            name,
            validate=lambda parsed: read(parsed, valid_ids),
        )
    except LLMError as exc:
        logger.warning(
            "%s pass failed, keeping the other passes' memories: %s", name, short_error(exc)
        )
        return PassOutcome(status="failed", error=short_error(exc))
    return PassOutcome(list(response.validated))


def tool_plan(window: WindowInput) -> PassPlan[Trajectory]:
    """The tool-trajectory call of one window (``general_llm`` slot)."""
    return _plan(
        window,
        slot="general_llm",
        system=TOOL_SYSTEM[window.language],
        schema=TOOL_SCHEMA,
        name="tool_trajectories",
        read=read_trajectories,
    )


def preference_plan(window: WindowInput) -> PassPlan[Preference]:
    """The preference call of one window (``preference_extractor_llm`` slot)."""
    return _plan(
        window,
        slot="preference_extractor_llm",
        system=PREFERENCE_SYSTEM[window.language],
        schema=PREFERENCE_SCHEMA,
        name="preferences",
        read=read_preferences,
    )


def skill_plan(window: WindowInput, successes: Sequence[Trajectory]) -> PassPlan[SkillDraft]:
    """The skill call of one window whose tool pass found successful attempts."""
    return _plan(
        window,
        slot="general_llm",
        system=SKILL_SYSTEM[window.language],
        schema=SKILL_SCHEMA,
        name="skills",
        read=read_skills,
        extra=[t.text() for t in successes],
    )
