"""Checks that text is valid Unicode, so that whatever holds it can be written as UTF-8.

Python strings may hold lone surrogates (``json.loads('"\\ud800"')`` gives one). Such text cannot
be encoded, so an item holding it could never be written or sent anywhere: input is checked
where it enters, and the error names where the text was (scene, message, part, or a path into
``info``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memreader.errors import InputError, InvalidInfoError, InvalidMessageError

__all__ = ["check_nested_text", "check_text", "printable"]


def check_text(
    value: str,
    what: str,
    *,
    error: type[InputError] = InvalidMessageError,
    scene_index: int | None = None,
    message_index: int | None = None,
    part_index: int | None = None,
) -> str:
    """Return ``value`` if it can be written as UTF-8, else raise ``error`` naming ``what`` and
    where.

    Python strings may hold lone surrogates (``json.loads('"\\ud800"')`` gives one); such text
    cannot be encoded, so an item holding it could never be written or sent anywhere.

    >>> check_text("tea", "content")
    'tea'
    >>> check_text("\\ud800", "chat_time", scene_index=0, message_index=2)
    Traceback (most recent call last):
    memreader.errors.InvalidMessageError: scene 0, message 2: chat_time holds a lone surrogate ...
    """
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(
            f"{what} holds a lone surrogate {value[exc.start]!r} at character {exc.start} "
            "(not valid Unicode text; an unpaired \\ud800-\\udfff escape in JSON makes one)",
            scene_index=scene_index,
            message_index=message_index,
            part_index=part_index,
        ) from None
    return value


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its ``\\udXXX`` escape, so a message quoting
    the caller's text (a key, a type name) can itself be written as UTF-8.

    >>> printable("key\\udfff")
    'key\\\\udfff'
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_nested_text(
    value: Any,
    what: str,
    *,
    error: type[InputError] = InvalidInfoError,
    scene_index: int | None = None,
    message_index: int | None = None,
    part_index: int | None = None,
) -> None:
    """Apply :func:`check_text` to every string key and value in ``value``, which may nest
    mappings and lists (as ``info`` does); the error names the path, e.g. ``info['tags'][2]``.

    >>> check_nested_text({"tags": ["a", "\\udc80"]}, "info")
    Traceback (most recent call last):
    memreader.errors.InvalidInfoError: info['tags'][1] holds a lone surrogate ...
    """
    where = {"scene_index": scene_index, "message_index": message_index, "part_index": part_index}
    stack: list[tuple[Any, str]] = [(value, what)]
    seen: set[int] = set()
    while stack:
        current, path = stack.pop()
        if isinstance(current, str):
            check_text(current, path, error=error, **where)
        elif isinstance(current, Mapping | list | tuple | set | frozenset):
            if id(current) in seen:  # a container met twice (or a cycle) is checked once
                continue
            seen.add(id(current))
            if isinstance(current, Mapping):
                for key, item in current.items():
                    if isinstance(key, str):
                        check_text(key, f"a key of {path}", error=error, **where)
                    stack.append((item, f"{path}[{printable(repr(key))}]"))
            else:
                stack.extend((item, f"{path}[{i}]") for i, item in enumerate(current))
