"""A LangGraph item's value as memreader keeps it: checked to survive a JSON round trip
exactly (:func:`checked_value`), the text of it that search ranks (:func:`indexed_text`, by
LangGraph's own ``index`` paths), and LangGraph's ``filter`` on it (:func:`matches`, the
operators LangGraph's stores take).

>>> checked_value({"food": {"likes": ["pão", 2]}}, "put")
{'food': {'likes': ['pão', 2]}}
>>> indexed_text({"text": "Ana likes tea", "n": 1}, ["text"])
'Ana likes tea'
>>> matches({"kind": "note", "stars": 4}, {"kind": "note", "stars": {"$gte": 3}})
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import get_text_at_path, tokenize_path

from memreader.errors import InputError

__all__ = [
    "IndexFields",
    "checked_index",
    "checked_value",
    "indexed_text",
    "json_text",
    "matches",
]

#: What an item's ``index`` may be: ``False`` (not ranked by a query), or LangGraph's paths.
IndexFields = Sequence[str] | bool | None

#: LangGraph's whole-value path: the value as one JSON text.
WHOLE_VALUE = ("$",)

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def checked_value(value: Any, call: str) -> dict[str, Any]:
    """``value`` as JSON gives it back (tuples become lists): what ``get`` will return, equal
    to what was put.

    >>> checked_value({1: "a"}, "put")
    Traceback (most recent call last):
    memreader.errors.InputError: put: value keys must be strings, got 1 at value

    Raises:
        InputError: not a mapping, a key that is not a string, a float that is not finite, or
            a value JSON cannot hold (the message names where: ``value['a'][0]``).
    """
    if not isinstance(value, Mapping):
        raise InputError(f"{call}: value must be a mapping, got {type(value).__name__}")
    return dict(_json_ready(value, "value", call))


def _json_ready(value: Any, where: str, call: str) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, inner in value.items():
            if not isinstance(key, str):
                raise InputError(f"{call}: value keys must be strings, got {key!r} at {where}")
            out[key] = _json_ready(inner, f"{where}[{key!r}]", call)
        return out
    if isinstance(value, (list, tuple)):
        return [_json_ready(inner, f"{where}[{i}]", call) for i, inner in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{call}: {where} is {value!r}, which JSON cannot hold")
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise InputError(
        f"{call}: {where} is a {type(value).__name__}, which JSON cannot hold "
        "(a value holds dicts, lists, strings, numbers, booleans and null)"
    )


def checked_index(index: Any, what: str) -> tuple[str, ...] | bool:
    """``index`` (a put's, or the store's ``fields``) as a tuple of paths, or ``False``;
    ``None`` and ``True`` as ``True`` (the store's default).

    Raises:
        InputError: anything else (the message names ``what``).
    """
    if index is None or index is True or index is False:
        return index is not False
    if isinstance(index, (str, bytes)) or not isinstance(index, Sequence):
        raise InputError(f"{what} must be False or a list of paths, got {index!r}")
    paths = tuple(index)
    if not paths or not all(isinstance(path, str) and path for path in paths):
        raise InputError(f"{what} must be a non-empty list of non-empty paths, got {index!r}")
    for path in paths:
        tokenize_path(path)  # a path LangGraph cannot read fails here, not at search
    return paths


def indexed_text(value: Mapping[str, Any], paths: Sequence[str]) -> str:
    """The text of ``value`` at ``paths`` (LangGraph's path syntax, ``"$"``: the whole value as
    JSON), one line per text found; the whole value's JSON when the paths find nothing, since
    a memory has a text.

    >>> indexed_text({"notes": [{"t": "a"}, {"t": "b"}]}, ["notes[*].t"])
    'a\\nb'
    >>> indexed_text({"n": 1}, ["missing"])
    '{"n": 1}'
    """
    texts = [text for path in paths for text in get_text_at_path(value, path) if text.strip()]
    return "\n".join(texts) if texts else get_text_at_path(value, "$")[0]


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes LangGraph's ``filter`` ``wanted``: each key equal, a nested
    dict matched key by key, a list element by element, or compared by an operator
    (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``).

    Raises:
        InputError: ``wanted`` is not a mapping, or names an unknown operator.
    """
    if wanted is None:
        return True
    if not isinstance(wanted, Mapping):
        raise InputError(f"search: filter must be a mapping, got {type(wanted).__name__}")
    return all(_compare(value.get(key), expected) for key, expected in wanted.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(key, str) and key.startswith("$") for key in expected):
            return all(_apply(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(
            _compare(actual.get(key), inner) for key, inner in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _apply(actual: Any, operator: str, operand: Any) -> bool:
    if operator not in _OPERATORS:
        raise InputError(
            f"search: filter operator {operator!r} is unknown; known: {', '.join(_OPERATORS)}"
        )
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if not _ordered(actual, operand):  # numbers with numbers, strings with strings (as JSONB)
        return False
    if operator == "$gt":
        return bool(actual > operand)
    if operator == "$gte":
        return bool(actual >= operand)
    if operator == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)


def _ordered(a: Any, b: Any) -> bool:
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    return (number(a) and number(b)) or (isinstance(a, str) and isinstance(b, str))


def json_text(value: Any) -> str:
    """``value`` as compact JSON (for comparing two values exactly)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
