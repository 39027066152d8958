"""What an evaluation reads: conversations of dated sessions whose messages carry ids, and
questions naming the ids of the messages that answer them (their ``evidence``).

:class:`EvalSet` is what the loaders (:mod:`memreader.evaluation.load`) return and what
:func:`~memreader.evaluation.run.evaluate` measures; a caller with data in another shape builds
one directly:

>>> hi = EvalMessage("m1", "user", "I adopted a beagle named Biscuit.", name="Ana")
>>> conv = EvalConversation(
...     "c1",
...     (EvalSession("s1", (hi,), date="2023-05-08"),),
...     (EvalQuestion("c1#q1", "What is Ana's dog called?", ("m1",), answer="Biscuit"),),
... )
>>> data = EvalSet("mine", (conv,))
>>> data.messages, data.questions, conv.message("m1").content
(1, 1, 'I adopted a beagle named Biscuit.')
>>> hi.as_message()
{'role': 'user', 'content': 'I adopted a beagle named Biscuit.', 'message_id': 'm1', 'name': 'Ana'}

A conversation also says what its loader left out, never silently: evidence ids that named no
message (``unknown_evidence``), questions left with no known evidence (``unanswerable``) and
questions of categories not asked for (``other_categories``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from memreader.errors import InputError

__all__ = [
    "Category",
    "EvalConversation",
    "EvalMessage",
    "EvalQuestion",
    "EvalSession",
    "EvalSet",
    "normalise_dia_ids",
    "normalise_text",
]

#: A question's category: LoCoMo's are integers (1 multi-hop, 2 temporal, 3 open-domain,
#: 4 single-hop, 5 adversarial), a simple-shape file may use names.
Category = int | str

#: A LoCoMo dialogue id, as its evidence lists spell it, well or not: ``D1:3``, ``D:11:26``,
#: ``D30:05``.
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """``text`` with every run of whitespace one space, stripped: how the containment checks
    compare a message with a hit's source or a context block.

    >>> normalise_text("  I  moved\\n to Porto. ")
    'I moved to Porto.'
    """
    return _SPACE.sub(" ", text).strip()


def normalise_dia_ids(text: str) -> list[str]:
    """Every LoCoMo dialogue id in ``text``, as ``D{session}:{turn}`` (leading zeros and a
    stray colon dropped); none when ``text`` holds none.

    >>> normalise_dia_ids("D:11:26"), normalise_dia_ids("D9:1 D4:4; D30:05"), normalise_dia_ids("D")
    (['D11:26'], ['D9:1', 'D4:4', 'D30:5'], [])
    """
    return [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(text)]


@dataclass(frozen=True)
class EvalMessage:
    """One message: its ``id`` (unique in its conversation; a search hit cites it by this id),
    ``role``, ``content``, the speaker's ``name`` and its ``chat_time``, as given."""

    id: str
    role: str
    content: str
    name: str | None = None
    chat_time: str | None = None

    def as_message(self) -> dict[str, Any]:
        """The message as :meth:`memreader.Memory.add` takes it (``message_id`` its id)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content, "message_id": self.id}
        if self.name is not None:
            out["name"] = self.name
        if self.chat_time is not None:
            out["chat_time"] = self.chat_time
        return out


@dataclass(frozen=True)
class EvalSession:
    """One session of a conversation (one :meth:`~memreader.Memory.add` call): its ``id``
    (unique in the conversation), its messages and its ``date`` as given."""

    id: str
    messages: tuple[EvalMessage, ...]
    date: str | None = None


@dataclass(frozen=True)
class EvalQuestion:
    """A question about its conversation; ``evidence``: the ids of the messages that answer it
    (each names a message of the conversation); ``answer`` and ``category`` as given."""

    id: str
    question: str
    evidence: tuple[str, ...]
    answer: str | None = None
    category: Category | None = None


@dataclass(frozen=True)
class EvalConversation:
    """One owner's memory: its sessions, in the order they are read, and its questions; what
    the loader left out: ``unknown_evidence`` (the evidence ids, as written, that named no
    message), ``unanswerable`` (questions skipped for want of known evidence),
    ``other_categories`` (questions of categories not asked for)."""

    id: str
    sessions: tuple[EvalSession, ...]
    questions: tuple[EvalQuestion, ...]
    unknown_evidence: tuple[str, ...] = ()
    unanswerable: int = 0
    other_categories: int = 0

    @cached_property
    def _by_id(self) -> dict[str, EvalMessage]:
        return {m.id: m for s in self.sessions for m in s.messages}

    def message(self, message_id: str) -> EvalMessage:
        """The message with ``message_id`` (``KeyError`` when none has it)."""
        return self._by_id[message_id]

    @property
    def messages(self) -> int:
        """How many messages the conversation holds."""
        return sum(len(s.messages) for s in self.sessions)


@dataclass(frozen=True)
class EvalSet:
    """Conversations and their questions, named (the file's name, for reports)."""

    name: str
    conversations: tuple[EvalConversation, ...] = field(default_factory=tuple)

    @property
    def messages(self) -> int:
        """How many messages all conversations hold."""
        return sum(c.messages for c in self.conversations)

    @property
    def questions(self) -> int:
        """How many questions all conversations ask."""
        return sum(len(c.questions) for c in self.conversations)

    def only(self, ids: list[str] | tuple[str, ...]) -> EvalSet:
        """The set with only the conversations ``ids`` names, in the set's order.

        Raises:
            InputError: an id names no conversation (the message lists the known ones).
        """
        known = [c.id for c in self.conversations]
        missing = [i for i in ids if i not in known]
        if missing:
            raise InputError(
                f"{self.name}: no conversation {', '.join(missing)}; known: {', '.join(known)}"
            )
        return EvalSet(self.name, tuple(c for c in self.conversations if c.id in ids))
