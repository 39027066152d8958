"""Two small conversations written for these tests (not LoCoMo's text), in LoCoMo's shape
(:func:`locomo_samples`) and in the simple shape (:func:`simple_file`), with the evidence ids a
real file gets wrong: ``"D:1:2"``, ``"D2:02"``, ``"D1:1 D2:2"`` (two in one string), ``"D"`` (none)
and ``"D9:9"`` (no such turn).

The first conversation's parrot question is trivially answerable: its words are the evidence
turn's own, in a conversation about nothing else like it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

_ONE: dict[str, Any] = {
    "sample_id": "conv-a",
    "conversation": {
        "speaker_a": "Ines",
        "speaker_b": "Tomas",
        "session_1_date_time": "9:12 am on 3 March, 2023",
        "session_1": [
            {
                "speaker": "Ines",
                "dia_id": "D1:1",
                "text": "Morning Tomas! I finally repainted the kitchen a pale green.",
            },
            {
                "speaker": "Tomas",
                "dia_id": "D1:2",
                "text": "Green is lovely. I signed up for a glassblowing course downtown.",
            },
            {
                "speaker": "Ines",
                "dia_id": "D1:3",
                "text": "My grandmother's parrot is named Captain Pickles and he whistles opera.",
            },
            {"speaker": "Tomas", "dia_id": "D1:4", "text": "Ha, a parrot with taste!"},
        ],
        "session_2_date_time": "6:40 pm on 19 March, 2023",
        "session_2": [
            {
                "speaker": "Tomas",
                "dia_id": "D2:1",
                "text": "The glassblowing teacher let me make a blue vase today.",
            },
            {
                "speaker": "Ines",
                "dia_id": "D2:2",
                "text": "Look what I found at the flea market!",
                "img_url": ["https://example.invalid/lamp.jpg"],
                "blip_caption": "a photo of a brass lamp shaped like a tulip",
                "query": "brass tulip lamp",
            },
            {
                "speaker": "Tomas",
                "dia_id": "D2:3",
                "text": "That lamp would suit your green kitchen.",
            },
        ],
        # No session 3: the numbers have a gap, as some real files do.
        "session_4_date_time": "8:05 pm on 2 April, 2023",
        "session_4": [
            {
                "speaker": "Ines",
                "dia_id": "D4:1",
                "text": "I'm running the harbour 10k race next Sunday.",
            },
            {
                "speaker": "Tomas",
                "dia_id": "D4:2",
                "text": "Good luck! I'll bring a sign & a thermos.",
            },
        ],
    },
    "qa": [
        {
            "question": "What is the name of the parrot that belongs to Ines's grandmother?",
            "answer": "Captain Pickles",
            "evidence": ["D1:3"],
            "category": 4,
        },
        {
            "question": "What course did Tomas sign up for?",
            "answer": "glassblowing",
            "evidence": ["D:1:2"],
            "category": 4,
        },
        {
            "question": "What did Tomas make in his course?",
            "answer": "a blue vase",
            "evidence": ["D2:01"],
            "category": 1,
        },
        {
            "question": "What did Ines buy at the flea market?",
            "answer": "a brass tulip lamp",
            "evidence": ["D1:1 D2:2"],
            "category": 1,
        },
        {
            "question": "When is Ines running a race?",
            "answer": 2023,
            "evidence": ["D4:1", "D9:9"],
            "category": 2,
        },
        {"question": "What colour is Tomas's car?", "evidence": ["D"], "category": 3},
        {
            "question": "What is the parrot afraid of?",
            "adversarial_answer": "cats",
            "evidence": ["D1:3"],
            "category": 5,
        },
    ],
}

_TWO: dict[str, Any] = {
    "sample_id": "conv-b",
    "conversation": {
        "speaker_a": "Wen",
        "speaker_b": "Oluchi",
        "session_1_date_time": "11:30 am on 5 June, 2023",
        "session_1": [
            {
                "speaker": "Wen",
                "dia_id": "D1:1",
                "text": "I planted tomatoes and basil on the balcony this weekend.",
            },
            {
                "speaker": "Oluchi",
                "dia_id": "D1:2",
                "text": "Nice! My band booked its first gig at the Lantern Club.",
            },
        ],
        "session_2_date_time": "4:15 pm on 21 June, 2023",
        "session_2": [
            {
                "speaker": "Oluchi",
                "dia_id": "D2:1",
                "text": "The gig went well, we played seven songs.",
            },
            {
                "speaker": "Wen",
                "dia_id": "D2:2",
                "text": "The basil is huge already, I made pesto twice.",
            },
        ],
    },
    "qa": [
        {
            "question": "Where did Oluchi's band play its first gig?",
            "answer": "the Lantern Club",
            "evidence": ["D1:2"],
            "category": 4,
        },
        {
            "question": "What did Wen make with the basil?",
            "answer": "pesto",
            "evidence": ["D2:02"],
            "category": 1,
        },
    ],
}


def locomo_samples() -> list[dict[str, Any]]:
    """The two conversations in LoCoMo's shape (a fresh copy each call)."""
    return copy.deepcopy([_ONE, _TWO])


def simple_file() -> dict[str, Any]:
    """The same talk in the simple shape: the first conversation's sessions as objects with a
    date, the second's as plain lists; ids as ``message_id`` in one place and integers in
    another; a question whose evidence names no message."""
    first = {
        "id": "conv-a",
        "sessions": [
            {
                "id": key,
                "date": _ONE["conversation"][f"{key}_date_time"],
                "messages": [_simple(turn, _ONE) for turn in _ONE["conversation"][key]],
            }
            for key in ("session_1", "session_2", "session_4")
        ],
        "questions": [
            {"question": q["question"], "evidence": q["evidence"], "category": q["category"]}
            for q in _ONE["qa"][:2]
        ]
        + [{"question": "Who runs the cafe?", "evidence": ["nope"]}],
    }
    second = {
        "id": "conv-b",
        "sessions": [
            [
                {"message_id": n * 10 + t, "role": "user", "content": turn["text"]}
                for t, turn in enumerate(_TWO["conversation"][key])
            ]
            for n, key in ((1, "session_1"), (2, "session_2"))
        ],
        "questions": [
            {"question": _TWO["qa"][0]["question"], "evidence": [11], "category": "single-hop"}
        ],
    }
    return {"conversations": [first, second]}


def _simple(turn: dict[str, Any], sample: dict[str, Any]) -> dict[str, Any]:
    role = "user" if turn["speaker"] == sample["conversation"]["speaker_a"] else "assistant"
    return {"id": turn["dia_id"], "role": role, "name": turn["speaker"], "content": turn["text"]}


def write(folder: Path, name: str, data: Any) -> Path:
    """``data`` as the JSON file ``folder/name``."""
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
