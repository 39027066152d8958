"""A skill as the text of its memory item, and back: the skill pass stores each skill it
distils as one item whose text is :func:`skill_text` (searchable like any memory), its ``key``
the skill's name and its ``background`` the description; :func:`read_skill_text` gets the steps
and inputs back from such a text, so the skill can be written as a ``SKILL.md`` bundle again
from the store alone (the memU layout of the Markdown export).

>>> text = skill_text("deploy", "Ship it.", ["build", "push the image"], ["tag"])
>>> text
'Skill deploy: Ship it. Steps: 1. build 2. push the image Inputs: tag.'
>>> read_skill_text(text, "deploy", "Ship it.")
(['build', 'push the image'], ['tag'])
>>> read_skill_text("Always stretch before running.", None, "")
(['Always stretch before running.'], [])
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["read_skill_text", "skill_name", "skill_text"]

_NAMED = re.compile(r"Skill (?P<name>[^:]{1,200}): ")


def skill_text(name: str, description: str, steps: Sequence[str], inputs: Sequence[str]) -> str:
    """The item text of a skill: its name, description, numbered steps and inputs."""
    numbered = " ".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
    listed = f" Inputs: {', '.join(inputs)}." if inputs else ""
    return f"Skill {name}: {description} Steps: {numbered}{listed}"


def skill_name(text: str) -> str | None:
    """The name a :func:`skill_text` starts with, or ``None``."""
    found = _NAMED.match(text)
    return found.group("name") if found else None


def read_skill_text(text: str, name: str | None, description: str) -> tuple[list[str], list[str]]:
    """The steps and inputs of a skill whose item text is ``text``; a text not made by
    :func:`skill_text` (a skill stored by hand) is one step, as it is."""
    head = f"Skill {name if name is not None else skill_name(text)}: {description} Steps: "
    if not text.startswith(head):
        return [text.strip()] if text.strip() else [], []
    rest, inputs = text[len(head) :], []
    if " Inputs: " in rest and rest.endswith("."):
        rest, listed = rest.rsplit(" Inputs: ", 1)
        inputs = [entry.strip() for entry in listed[:-1].split(", ") if entry.strip()]
    steps, number = [], 1
    rest = rest.removeprefix("1. ")
    while True:  # "a 2. b 3. c": each next number in turn, so "3. " inside step 1 stays text
        marker = f" {number + 1}. "
        cut = rest.find(marker)
        if cut < 0:
            steps.append(rest)
            break
        steps.append(rest[:cut])
        rest, number = rest[cut + len(marker) :], number + 1
    return [step.strip() for step in steps if step.strip()], inputs
