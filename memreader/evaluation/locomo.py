"""LoCoMo's shape (snap-research/LoCoMo, ``data/locomo10.json``) read as an
:class:`~memreader.evaluation.data.EvalSet`.

A sample is ``{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_1": [turn, ...],
"session_1_date_time": "1:56 pm on 8 May, 2023", ...}, "qa": [{"question", "answer",
"evidence": ["D1:3", ...], "category": 1..5}]}``; a turn is ``{"speaker", "dia_id", "text"}``
and maybe ``"blip_caption"`` (a shared photo's caption), ``"img_url"`` and ``"query"``.

Each turn becomes a message: role ``user`` for ``speaker_a`` and ``assistant`` for
``speaker_b``, ``name`` the speaker (none with ``names=False``), ``content`` the text plus
``" [shares <caption>]"`` when the turn shares a photo, ``chat_time`` the session's date and
``message_id`` the ``dia_id``. Sessions are read in the order of their numbers (gaps
tolerated). Evidence ids are read with :func:`~memreader.evaluation.data.normalise_dia_ids`,
since the real file holds ``"D:11:26"``, ``"D30:05"`` and ``"D9:1 D4:4 D4:6"``; the questions
of categories 1-4 are asked by default (5 is adversarial: its answer is not in the talk).

>>> sample = {"sample_id": "c1", "conversation": {"speaker_a": "Ana", "speaker_b": "Bo",
...     "session_1_date_time": "1:56 pm on 8 May, 2023",
...     "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "Look!",
...                    "blip_caption": "a photo of a dog"}]},
...     "qa": [{"question": "What did Ana show?", "evidence": ["D:1:1"], "category": 4}]}
>>> conv = locomo_conversations([sample], "f.json", names=True, categories=None)[0]
>>> conv.message("D1:1").as_message()["content"], conv.questions[0].evidence
('Look! [shares a photo of a dog]', ('D1:1',))
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from memreader.errors import InputError
from memreader.evaluation.data import (
    Category,
    EvalConversation,
    EvalMessage,
    EvalSession,
    normalise_dia_ids,
)
from memreader.evaluation.fields import (
    category,
    identifier,
    mapping,
    optional_text,
    required,
    sequence,
    text,
)
from memreader.evaluation.questions import RawQuestion, conversation

__all__ = ["LOCOMO_CATEGORIES", "is_locomo", "locomo_conversations"]

#: The categories asked by default: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop
#: (5, adversarial, asks about what was never said).
LOCOMO_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)

_SESSION = re.compile(r"session_(\d+)")


def is_locomo(value: Any) -> bool:
    """Whether ``value`` looks like one LoCoMo sample (it has a ``conversation``)."""
    return isinstance(value, Mapping) and "conversation" in value


def locomo_conversations(
    samples: list[Any],
    name: str,
    *,
    names: bool,
    categories: Collection[Category] | None,
) -> tuple[EvalConversation, ...]:
    """The conversations of LoCoMo ``samples`` read from the file ``name`` (see the module).

    Raises:
        InputError: a sample, session, turn or question of the wrong shape, a speaker who is
            neither ``speaker_a`` nor ``speaker_b``, a ``dia_id`` or ``sample_id`` twice.
    """
    out: list[EvalConversation] = []
    for n, raw in enumerate(samples, 1):
        where = f"{name}: conversation {n}"
        sample = mapping(raw, where)
        conv_id = identifier(sample.get("sample_id", f"conv-{n}"), '"sample_id"', where)
        where = f"{where} ({conv_id})"
        if any(c.id == conv_id for c in out):
            raise InputError(f'{where}: "sample_id" {conv_id!r} is used twice')
        talk = mapping(required(sample, "conversation", where), f'{where}: "conversation"')
        sessions = _sessions(talk, where, names)
        qa = sequence(required(sample, "qa", where), f'{where}: "qa"')
        questions = [
            _question(q, f"{where}: qa {i}", f"{conv_id}#q{i}") for i, q in enumerate(qa, 1)
        ]
        out.append(conversation(conv_id, sessions, questions, categories=categories))
    return tuple(out)


def _sessions(talk: Mapping[str, Any], where: str, names: bool) -> tuple[EvalSession, ...]:
    speakers = {text(talk, "speaker_a", where): "user"}
    speaker_b = text(talk, "speaker_b", where)
    if speaker_b in speakers:
        raise InputError(f"{where}: speaker_a and speaker_b are both {speaker_b!r}")
    speakers[speaker_b] = "assistant"
    numbers = sorted(int(m[1]) for key in talk if (m := _SESSION.fullmatch(key)))
    if not numbers:
        raise InputError(f'{where}: "conversation" has no "session_1", "session_2", ...')
    seen: dict[str, str] = {}
    sessions = []
    for number in numbers:
        key = f"session_{number}"
        turns = sequence(talk[key], f"{where}: {key}")
        date = optional_text(talk, f"{key}_date_time", where)
        messages = []
        for t, raw in enumerate(turns, 1):
            at = f"{where}: {key} turn {t}"
            turn = mapping(raw, at)
            speaker = text(turn, "speaker", at)
            if speaker not in speakers:
                raise InputError(
                    f"{at}: speaker {speaker!r} is neither speaker_a nor speaker_b "
                    f"({', '.join(map(repr, speakers))})"
                )
            message_id = _dia_id(text(turn, "dia_id", at))
            if message_id in seen:
                raise InputError(f"{at}: dia_id {message_id!r} is also {seen[message_id]}'s")
            seen[message_id] = f"{key} turn {t}"
            content = text(turn, "text", at)
            caption = optional_text(turn, "blip_caption", at)
            if caption:
                content = f"{content} [shares {caption}]"
            name = speaker if names else None
            messages.append(EvalMessage(message_id, speakers[speaker], content, name, date))
        if messages:  # a session of no turns is nothing to read
            sessions.append(EvalSession(key, tuple(messages), date))
    return tuple(sessions)


def _dia_id(written: str) -> str:
    """A turn's ``dia_id`` as its evidence ids are read (``D1:03`` is ``D1:3``)."""
    found = normalise_dia_ids(written)
    return found[0] if len(found) == 1 else written.strip()


def _question(raw: Any, where: str, question_id: str) -> RawQuestion:
    item = mapping(raw, where)
    evidence = []
    for entry in sequence(item.get("evidence", []), f'{where}: "evidence"'):
        if not isinstance(entry, str):
            raise InputError(f'{where}: "evidence" holds {entry!r}, not an id string')
        evidence.append((entry, tuple(normalise_dia_ids(entry))))
    return RawQuestion(
        question_id,
        text(item, "question", where),
        tuple(evidence),
        optional_text(item, "answer", where),
        category(item, where),
    )
