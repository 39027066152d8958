"""Adapting a JSON schema to what a backend's constrained decoding accepts.

llama.cpp (its server, llama-cpp-python, and Ollama, which uses the same converter) turns a
schema into a grammar; a ``maxLength`` of a few thousand characters expands into more grammar
rules than its parser accepts, and llama-cpp-python's server crashes on it. Grammar-based modes
therefore get the schema without string length limits; ``maxItems`` stays, so an answer cut off
by a list limit is still detectable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_GRAMMAR_UNSAFE = frozenset({"maxLength", "minLength"})


def grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` without the keywords that break grammar-based decoding.

    >>> grammar_schema({"type": "string", "maxLength": 2000})
    {'type': 'string'}
    """
    return _strip(schema)  # type: ignore[no-any-return]


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip(v) for k, v in value.items() if k not in _GRAMMAR_UNSAFE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
