"""Reading the fields of an evaluation file, each with where it is: a wrong one raises
:class:`~memreader.errors.InputError` whose message names the file and the place
(``locomo.json: conversation 2 (conv-43): session_4 turn 7: no "text"``).

>>> text({"text": "hi"}, "text", "f.json: turn 1")
'hi'
>>> text({}, "text", "f.json: turn 1")
Traceback (most recent call last):
...
memreader.errors.InputError: f.json: turn 1: no "text"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memreader.errors import InputError

__all__ = ["category", "identifier", "mapping", "optional_text", "required", "sequence", "text"]


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def required(raw: Mapping[str, Any], key: str, where: str) -> Any:
    """``raw[key]``, which must be there (and not null)."""
    if raw.get(key) is None:
        raise InputError(f'{where}: no "{key}"')
    return raw[key]


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    """``value``, which must be a JSON object."""
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an object, got {_kind(value)}")
    return value


def sequence(value: Any, where: str) -> list[Any]:
    """``value``, which must be a JSON array."""
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, got {_kind(value)}")
    return value


def text(raw: Mapping[str, Any], key: str, where: str) -> str:
    """``raw[key]``, which must be a string."""
    value = required(raw, key, where)
    if not isinstance(value, str):
        raise InputError(f'{where}: "{key}" must be a string, got {_kind(value)}')
    return value


def optional_text(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    """``raw[key]``: a string, or ``None`` when absent or null; a number reads as its text
    (LoCoMo has answers such as ``2022``)."""
    value = raw.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise InputError(f'{where}: "{key}" must be a string, got {_kind(value)}')


def identifier(value: Any, what: str, where: str) -> str:
    """``value`` as an id: a non-empty string, or an integer (read as its digits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    raise InputError(f"{where}: {what} must be a non-empty string or an integer, got {value!r}")


def category(raw: Mapping[str, Any], where: str) -> int | str | None:
    """``raw["category"]``: an integer, a string or ``None`` (absent or null)."""
    value = raw.get("category")
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return value
    raise InputError(f'{where}: "category" must be an integer or a string, got {_kind(value)}')
