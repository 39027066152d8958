"""A conversation's questions made ready to ask, whatever the file's shape: categories not
asked for left out, each question's evidence resolved to the ids of the conversation's
messages, and what could not be counted (never dropped silently).

An evidence entry, as written, names ids (LoCoMo's ``"D9:1 D4:4"`` names two; ``"D"`` none);
an id that names no message, or an entry that names none, is ``unknown_evidence``; a question
left with no known evidence is skipped and counted as ``unanswerable``.

>>> from memreader.evaluation.data import EvalMessage
>>> hi = EvalMessage("D1:1", "user", "hi")
>>> raw = [RawQuestion("q1", "greeting?", (("D1:1 D7:2", ("D1:1", "D7:2")),)),
...        RawQuestion("q2", "who?", (("D", ()),)),
...        RawQuestion("q3", "trap?", (("D1:1", ("D1:1",)),), category=5)]
>>> conv = conversation("c1", (EvalSession("s1", (hi,)),), raw, categories=(1, 2, 3, 4))
>>> [q.evidence for q in conv.questions], conv.unknown_evidence, conv.unanswerable
([('D1:1',)], ('D7:2', 'D'), 1)
>>> conv.other_categories
1
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from memreader.evaluation.data import Category, EvalConversation, EvalQuestion, EvalSession

__all__ = ["RawQuestion", "conversation", "wanted"]


@dataclass(frozen=True)
class RawQuestion:
    """A question as read, before its evidence is checked: ``evidence`` holds each entry as
    written with the ids it names."""

    id: str
    question: str
    evidence: tuple[tuple[str, tuple[str, ...]], ...]
    answer: str | None = None
    category: Category | None = None


def wanted(category: Category | None, categories: Collection[Category] | None) -> bool:
    """Whether a question of ``category`` is asked: every one when ``categories`` is ``None``,
    and one without a category always (categories compare as text: ``1`` is ``"1"``)."""
    if categories is None or category is None:
        return True
    return str(category) in {str(c) for c in categories}


def conversation(
    conv_id: str,
    sessions: tuple[EvalSession, ...],
    questions: Sequence[RawQuestion],
    *,
    categories: Collection[Category] | None,
) -> EvalConversation:
    """The conversation ``conv_id`` with its ``questions`` resolved (see the module)."""
    known = {m.id for s in sessions for m in s.messages}
    kept: list[EvalQuestion] = []
    unknown: list[str] = []
    unanswerable = other = 0
    for raw in questions:
        if not wanted(raw.category, categories):
            other += 1
            continue
        evidence: list[str] = []
        for written, named in raw.evidence:
            if not named:
                unknown.append(written)
            for message_id in named:
                if message_id not in known:
                    unknown.append(message_id)
                elif message_id not in evidence:
                    evidence.append(message_id)
        if not evidence:
            unanswerable += 1
            continue
        kept.append(EvalQuestion(raw.id, raw.question, tuple(evidence), raw.answer, raw.category))
    return EvalConversation(conv_id, sessions, tuple(kept), tuple(unknown), unanswerable, other)
