"""A skill as the text of its memory item, and back: the skill pass stores each skill it
distils as one item whose text is :func:`skill_text` (searchable like any memory), its ``key``
the skill's name and its ``background`` the description; :func:`read_skill_text` gets the
parts back from such a text, so the skill can be written as a ``SKILL.md`` bundle again from
the store alone (the memU layout of the Markdown export).

>>> text = skill_text("deploy", "Ship it.", ["build", "push the image"], ["tag"])
>>> text
'Skill deploy: Ship it. Steps: 1. build 2. push the image Inputs: tag.'
>>> read_skill_text(text)
SkillParts(name='deploy', description='Ship it.', steps=['build', 'push the image'], inputs=['tag'])
>>> read_skill_text("Always stretch before running.") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SkillParts", "read_skill_text", "skill_text"]

_NAMED = re.compile(r"Skill (?P<name>[^:]{1,200}): ")
_STEPS = " Steps: "
_INPUTS = " Inputs: "


@dataclass(frozen=True)
class SkillParts:
    """What :func:`read_skill_text` found in a skill's text."""

    name: str
    description: str
    steps: list[str]
    inputs: list[str]


def skill_text(name: str, description: str, steps: Sequence[str], inputs: Sequence[str]) -> str:
    """The item text of a skill: its name, description, numbered steps and inputs."""
    numbered = " ".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
    listed = f"{_INPUTS}{', '.join(inputs)}." if inputs else ""
    return f"Skill {name}: {description}{_STEPS}{numbered}{listed}"


def read_skill_text(
    text: str, name: str | None = None, description: str | None = None
) -> SkillParts | None:
    """The parts of a text :func:`skill_text` made; ``None`` for any other text (a skill
    stored by hand). ``name`` and ``description``, when known (the item's ``key`` and
    ``background``), settle where they end even when they hold ``: `` or `` Steps: ``."""
    if name and text.startswith(f"Skill {name}: "):
        rest = text[len(f"Skill {name}: ") :]
    elif (found := _NAMED.match(text)) is not None:
        name, rest = found.group("name"), text[found.end() :]
    else:
        return None
    if description and rest.startswith(description + _STEPS):
        body = rest[len(description + _STEPS) :]
    elif _STEPS in rest:
        description, body = rest.split(_STEPS, 1)
    else:
        return None
    inputs: list[str] = []
    if _INPUTS in body and body.endswith("."):
        body, listed = body.rsplit(_INPUTS, 1)
        inputs = [entry.strip() for entry in listed[:-1].split(", ") if entry.strip()]
    return SkillParts(name, description.strip(), _numbered(body), inputs)


def _numbered(body: str) -> list[str]:
    """``1. a 2. b 3. c`` as its steps: each next number in turn, so a ``3. `` inside step 1
    stays text."""
    steps, number, rest = [], 1, body.removeprefix("1. ")
    while True:
        marker = f" {number + 1}. "
        cut = rest.find(marker)
        if cut < 0:
            steps.append(rest)
            break
        steps.append(rest[:cut])
        rest, number = rest[cut + len(marker) :], number + 1
    return [step.strip() for step in steps if step.strip()]
