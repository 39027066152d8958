"""What ``Memory.add`` accepts, made into what a reader reads: the input's type, its scenes,
the ``info`` of the call (with a default session id) and the sources ``forget`` names.

``type=None`` guesses, in this order:

- a string: one chat message from the user (``[[{"role": "user", "content": text}]]``);
- a list of message dicts (each has a ``role``): one chat, one scene;
- a list whose items are all lists: a list of scenes (chat);
- a list whose items are all strings or dicts without a ``role`` (text, parts): documents;
- anything else: an :class:`~memreader.errors.InputError` naming what was given.

``type="chat"`` or ``type="doc"`` says it outright (a string with ``type="doc"`` is one
document). A missing ``session_id`` is ``auto-`` and the first 16 hex digits of the sha256 of
the input (its type and its canonical JSON): adding the same input again gives the same session
(and the same item ids, so the store changes nothing), and ``forget("session:auto-...")``
forgets it.

>>> shape_input("I live in Porto.", None)
('chat', [[{'role': 'user', 'content': 'I live in Porto.'}]])
>>> shape_input(["# Notes", "Ana lives in Porto."], None)[0]
'doc'
>>> session_digest("chat", [[{"role": "user", "content": "hi"}]])  # doctest: +ELLIPSIS
'auto-...'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from memreader.errors import InputError
from memreader.front.resources import is_resource, read_resource
from memreader.scopes import SCOPE_KEYS, info_scope
from memreader.stores import SourceSelector

__all__ = [
    "AUTO_SESSION",
    "PreparedInput",
    "check_user",
    "make_info",
    "prepare_input",
    "session_digest",
    "shape_input",
    "source_selector",
]

#: The prefix of a session id ``add`` made up from the input.
AUTO_SESSION = "auto-"
_TYPES = ("chat", "doc")
_SOURCES = {
    "doc": "doc_path",
    "session": "session_id",
    "message": "message_id",
    "input": "input_key",
}


def shape_input(data: Any, type: str | None) -> tuple[str, list[Any]]:
    """The type (``chat`` or ``doc``) and the scenes of ``data`` (see the module docstring).

    Raises:
        InputError: ``type`` is not ``None``, ``chat`` or ``doc``, or ``data`` has none of
            the shapes above.
    """
    if type is not None and type not in _TYPES:
        raise InputError(f"add(type=...) must be None, 'chat' or 'doc', got {type!r}")
    if isinstance(data, str):
        if type == "doc":
            return "doc", [data]
        return "chat", [[{"role": "user", "content": data}]]
    if not isinstance(data, (list, tuple)) or not data:
        raise InputError(
            "add() takes a string, a chat (a list of message dicts), a list of scenes or a list "
            f"of documents; got {_what(data)}"
        )
    items = list(data)
    messages = all(isinstance(x, Mapping) and "role" in x for x in items)
    if type == "doc":
        return "doc", items
    if messages:
        return "chat", [items]
    if type == "chat" or all(isinstance(x, (list, tuple)) for x in items):
        return "chat", items
    if all(isinstance(x, str) or (isinstance(x, Mapping) and "role" not in x) for x in items):
        return "doc", items
    raise InputError(
        "add() cannot tell what this list is (mixed messages, scenes and documents): "
        "pass type='chat' or type='doc'"
    )


def session_digest(type: str, scenes: list[Any]) -> str:
    """``auto-`` and 16 hex digits of the sha256 of ``type`` and ``scenes`` (canonical JSON;
    what JSON cannot hold counts by its ``str``)."""
    text = json.dumps([type, scenes], sort_keys=True, ensure_ascii=False, default=str)
    return AUTO_SESSION + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def make_info(
    user_id: Any,
    session_id: Any,
    metadata: Mapping[str, Any] | None,
    scope: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``info`` of a read: ``metadata``'s keys (kept in each item's ``metadata.info``)
    with ``user_id``, ``session_id`` and the ``scope`` given (``agent_id``, ``task_id``,
    ``visibility``: :mod:`memreader.scopes`; ``None`` values left out).

    Raises:
        InputError: ``metadata`` is not a mapping, or names ``user_id``, ``session_id`` or a
            scope key; a bad scope (the message names it).
    """
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise InputError(f"add(metadata=...) must be a dict, got {_what(metadata)}")
    clash = sorted(({"user_id", "session_id"} | SCOPE_KEYS) & set(metadata))
    if clash:
        raise InputError(f"add(metadata=...) may not hold {clash[0]!r}: pass it as an argument")
    checked = info_scope(scope or {}, where="")
    return {**metadata, "user_id": user_id, "session_id": session_id, **checked}


def source_selector(source: Any) -> SourceSelector:
    """``source`` as a :class:`~memreader.stores.SourceSelector`: one already, or
    ``doc:PATH``, ``session:ID``, ``message:ID`` or ``input:KEY``.

    >>> source_selector("session:s1").session_id
    's1'

    Raises:
        InputError: another shape.
    """
    if isinstance(source, SourceSelector):
        return source
    if isinstance(source, str):
        kind, sep, value = source.partition(":")
        if sep and kind in _SOURCES and value:
            return SourceSelector(**{_SOURCES[kind]: value})
    raise InputError(
        f"forget() takes a SourceSelector or doc:PATH, session:ID, message:ID or input:KEY; "
        f"got {source!r}"
    )


def check_user(user_id: Any, call: str) -> str:
    """``user_id`` when it is a non-empty string.

    Raises:
        InputError: it is missing, empty or not a string.
    """
    if user_id is None:
        raise InputError(f"{call} needs user_id= (every memory has an owner)")
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(f"{call}: user_id must be a non-empty string, got {user_id!r}")
    return user_id


def _what(value: Any) -> str:
    if isinstance(value, (list, tuple)) and not value:
        return "an empty list"
    return type(value).__name__


#: The checked input of ``add``: its type, scenes, ``info`` and whether the session id was
#: made up (``session_id=None``: a digest of the scenes).
PreparedInput = tuple[str, list[Any], dict[str, Any], bool]


def prepare_input(
    data: Any,
    user_id: Any,
    session_id: Any,
    type: str | None,
    metadata: Mapping[str, Any] | None,
    scope: Mapping[str, Any] | None = None,
    reader_config: Any = None,
) -> PreparedInput:
    """``add``'s input checked and shaped (see :data:`PreparedInput`).

    >>> kind, scenes, info, generated = prepare_input("I live in Porto.", "ana", "s1", None, None)
    >>> kind, info["user_id"], info["session_id"], generated
    ('chat', 'ana', 's1', False)

    A path or URL object is read first, under ``reader_config``'s limits and fetch settings
    (:mod:`memreader.front.resources`).

    Raises:
        InputError: no ``user_id``, an input of no known shape, a blank ``session_id``, bad
            ``metadata``; a path or URL that cannot be read (``DocumentError``,
            ``FetchError``).
    """
    owner = check_user(user_id, "add()")
    if is_resource(data):
        type, data = read_resource(data, type, reader_config)
    kind, scenes = shape_input(data, type)
    generated = session_id is None
    if not generated and (not isinstance(session_id, str) or not session_id.strip()):
        raise InputError(
            f"add(): session_id must be a non-empty string or None, got {session_id!r}"
        )
    session = session_digest(kind, scenes) if generated else session_id
    return kind, scenes, make_info(owner, session, metadata, scope), generated
