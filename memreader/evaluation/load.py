"""Evaluation files read: LoCoMo's shape (:mod:`memreader.evaluation.locomo`) or the simple
shape (:mod:`memreader.evaluation.simple`), told apart by their keys.

>>> import json, tempfile, os
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "mine.json")
>>> chat = [{"id": "m1", "role": "user", "content": "I moved to Porto.", "name": "Ana"}]
>>> asked = [{"question": "Where does Ana live?", "evidence": ["m1"]}]
>>> with open(path, "w") as f:
...     json.dump({"sessions": [chat], "questions": asked}, f)
>>> data = load_eval_file(path)
>>> data.name, data.messages, data.questions
('mine.json', 1, 1)
>>> load_eval_file(path, names=False).conversations[0].message("m1").name is None
True

Every way a file can be wrong raises :class:`~memreader.errors.InputError` naming the file
and the place: it cannot be read, is over :data:`MAX_EVAL_FILE_BYTES`, is not UTF-8 JSON, is of
neither shape, or a conversation, session, message or question in it is malformed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from memreader.errors import InputError
from memreader.evaluation.data import Category, EvalConversation, EvalSet
from memreader.evaluation.locomo import LOCOMO_CATEGORIES, is_locomo, locomo_conversations
from memreader.evaluation.simple import is_simple, simple_conversations
from memreader.files import FileRefused, read_regular_file

__all__ = ["MAX_EVAL_FILE_BYTES", "load_eval_file", "parse_eval_data"]

#: An evaluation file larger than this is refused before it is parsed (LoCoMo's ten
#: conversations are 2.8 MB).
MAX_EVAL_FILE_BYTES = 256 * 1024 * 1024

_SHAPES = (
    'LoCoMo\'s (a list of {"sample_id", "conversation", "qa"}) or the simple one '
    '({"sessions": [...], "questions": [...]}, a list of them, or {"conversations": [...]})'
)


def load_eval_file(
    path: str | os.PathLike[str],
    *,
    names: bool = True,
    categories: Collection[Category] | None = None,
    max_bytes: int = MAX_EVAL_FILE_BYTES,
) -> EvalSet:
    """The conversations and questions of the JSON file ``path``, named by its file name.

    Args:
        names: give each message its speaker's ``name`` (``False``: no names).
        categories: the question categories to ask; ``None``: the shape's default (LoCoMo: 1-4,
            the adversarial 5 left out; the simple shape: all). A question without a category
            is always asked.
        max_bytes: the largest file read.

    Raises:
        InputError: see the module.
    """
    name = Path(path).name
    try:
        raw = read_regular_file(path, max_bytes)
    except FileRefused as exc:
        raise InputError(f"{name}: cannot read it: {exc.reason}") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 (byte offset {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{name}: not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{name}: not JSON this reader takes: it nests too deeply") from None
    return parse_eval_data(data, name, names=names, categories=categories)


def parse_eval_data(
    data: Any,
    name: str = "data",
    *,
    names: bool = True,
    categories: Collection[Category] | None = None,
) -> EvalSet:
    """The :class:`EvalSet` of ``data`` as parsed from JSON (``name`` in messages and reports);
    ``names`` and ``categories`` as :func:`load_eval_file`'s.

    Raises:
        InputError: ``data`` is of neither shape, or a part of it is malformed.
    """
    items: Any = data
    if isinstance(data, Mapping) and "conversations" in data and not is_simple(data):
        items = data["conversations"]
        if not isinstance(items, list):
            raise InputError(f'{name}: "conversations" must be a list')
    elif isinstance(data, Mapping):
        items = [data]
    if not isinstance(items, list):
        raise InputError(f"{name}: a JSON {type(data).__name__} is neither shape: {_SHAPES}")
    if not items:
        raise InputError(f"{name}: holds no conversation")
    if is_locomo(items[0]):
        wanted = LOCOMO_CATEGORIES if categories is None else categories
        found = locomo_conversations(items, name, names=names, categories=wanted)
    elif is_simple(items[0]):
        found = simple_conversations(items, name, names=names, categories=categories)
    else:
        raise InputError(f"{name}: neither shape: {_SHAPES}")
    _check_sessions(found, name)
    return EvalSet(name, found)


def _check_sessions(conversations: tuple[EvalConversation, ...], name: str) -> None:
    for n, conv in enumerate(conversations, 1):
        if not conv.sessions:
            raise InputError(f"{name}: conversation {n} ({conv.id}): holds no message")
