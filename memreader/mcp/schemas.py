"""The input schema a client lists for a tool, short: what an agent loads into its context on
every session, so every token counts (issue 42: the whole ``tools/list`` at most 1,500 cl100k
tokens, from 5,526). The pydantic models of :mod:`memreader.mcp.arguments` still check every
call in full (lengths, ranges, unknown fields); the listing keeps what a model needs to call a
tool right: each field's type, its description, its allowed values and numeric bounds.

Left out: pydantic's generated titles (the field's name again), the model's docstring, the
``null`` branch and ``null`` default of an optional field (leaving it out is how a model says
null), ``additionalProperties: true`` (the default), a nested model's docstring, and string
lengths (a call over them is refused with a message naming the field).

>>> from pydantic import BaseModel, Field
>>> class Args(BaseModel):
...     '''Not for the client.'''
...     query: str = Field(max_length=10, description="What to look for.")
...     session_id: str | None = Field(default=None, description="Only this conversation.")
>>> schema = compact_schema(Args)
>>> schema["properties"]["session_id"], schema["required"], "title" in schema
({'description': 'Only this conversation.', 'type': 'string'}, ['query'], False)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["compact_schema"]

_DROPPED = {"title", "minLength", "maxLength", "minItems", "maxItems"}


def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as a client lists it (see the module docstring)."""
    schema = model.model_json_schema()
    schema.pop("description", None)
    for nested in schema.get("$defs", {}).values():  # a nested model's docstring too
        nested.pop("description", None)
    compacted = _compact(schema)
    assert isinstance(compacted, dict)
    return compacted


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(value) for value in node]
    if not isinstance(node, dict):
        return node
    branches = node.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(branches):  # optional: the value's own schema
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept[0]}
            if node.get("default", 0) is None:
                del node["default"]
    compacted: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":  # field names, never dropped: each field's schema compacted
            compacted[key] = {name: _compact(field) for name, field in value.items()}
        elif key not in _DROPPED and not (key == "additionalProperties" and value is True):
            compacted[key] = _compact(value)  # (additionalProperties: true is the default)
    return compacted
