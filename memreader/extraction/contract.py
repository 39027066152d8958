"""The JSON contract between memreader and the extraction model, and its repair.

The model answers ``{"memory_list": [{"key", "memory_type", "value", "tags", "source_ids"}],
"summary"}``, each memory optionally with ``importance`` (an integer 0..10), ``importance_reason``
(one line), ``valid_from`` (the ISO date or datetime the fact began to hold, resolved from the
cited messages' times) and ``categories`` (names from the list the prompt shows, see
:class:`CategoryMenu`). Answers are repaired, not dropped: the legacy key ``"memory list"`` is
accepted, Chinese memory-type names are mapped, an unknown type becomes ``LongTermMemory`` (and
the item is tagged), tags that are not strings are dropped, ``source_ids`` that name no message
of the window are removed, and a malformed or out-of-range ``importance`` or a ``valid_from``
that does not parse becomes ``None`` (see :mod:`memreader.extraction.importance`) without
failing the memory; category names the prompt did not offer are dropped (``categories``), and
more than the menu allows are cut (``clipped``). Every repair is recorded on the memory so it
can be seen and counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from memreader.extraction.importance import (
    IMPORTANCE_SCALE,
    MAX_VALID_FROM_CHARS,
    Importance,
    read_importance,
    read_valid_from,
)
from memreader.items import MAX_IMPORTANCE_REASON_CHARS, MEMORY_TYPES, MemoryType

MAX_MEMORIES = 32
MAX_VALUE_CHARS = 2000
MAX_KEY_CHARS = 120
MAX_SUMMARY_CHARS = 2000
MAX_TAGS = 8
MAX_TAG_CHARS = 64
#: The most category names one memory may carry (``categories.max_per_item``'s upper bound).
MAX_CATEGORIES = 20

# Types the extraction prompt offers the model; other MemOS types come from other readers.
EXTRACTABLE_TYPES = (MemoryType.LONG_TERM.value, MemoryType.USER.value)

CHINESE_TYPES = {
    "长期记忆": MemoryType.LONG_TERM,
    "用户记忆": MemoryType.USER,
    "工作记忆": MemoryType.WORKING,
    "外部记忆": MemoryType.OUTER,
    "偏好记忆": MemoryType.PREFERENCE,
    "技能记忆": MemoryType.SKILL,
    "上下文": MemoryType.CONTEXT,
}
_BY_LOWER = {t.lower(): MemoryType(t) for t in MEMORY_TYPES}
_BY_LOWER.update(
    {"longterm": MemoryType.LONG_TERM, "long_term": MemoryType.LONG_TERM, "user": MemoryType.USER}
)

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory_list": {
            "type": "array",
            "maxItems": MAX_MEMORIES,
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "maxLength": MAX_KEY_CHARS},
                    "memory_type": {"type": "string", "enum": list(EXTRACTABLE_TYPES)},
                    "value": {"type": "string", "maxLength": MAX_VALUE_CHARS},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_TAGS},
                    "source_ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 64},
                    "importance": {"type": "integer", "minimum": 0, "maximum": IMPORTANCE_SCALE},
                    "importance_reason": {
                        "type": "string",
                        "maxLength": MAX_IMPORTANCE_REASON_CHARS,
                    },
                    "valid_from": {"type": "string", "maxLength": MAX_VALID_FROM_CHARS},
                    "categories": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_CATEGORIES,
                    },
                },
                "required": ["key", "memory_type", "value", "tags", "source_ids"],
            },
        },
        "summary": {"type": "string", "maxLength": MAX_SUMMARY_CHARS},
    },
    "required": ["memory_list", "summary"],
}


@dataclass(frozen=True)
class CategoryMenu:
    """The categories an extraction prompt offers: ``(name, description)`` pairs, and the most
    names one memory may carry. Built from the reader's ``categories`` config (the catch-all
    left out: a memory that fits nothing names none). ``described``: the prompt lists each
    name with its description (``categories.prompt_descriptions``); otherwise the names
    alone."""

    categories: tuple[tuple[str, str], ...]
    max_per_item: int = 3
    described: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """The names offered, in order."""
        return tuple(name for name, _ in self.categories)


def extraction_schema(menu: CategoryMenu | None = None) -> dict[str, Any]:
    """:data:`EXTRACTION_SCHEMA`, with ``categories`` limited to the names of ``menu`` (an
    ``enum``, which grammar-based servers such as llama.cpp enforce) when one is given.

    >>> schema = extraction_schema(CategoryMenu((("health", "Illness."),), 2))
    >>> schema["properties"]["memory_list"]["items"]["properties"]["categories"]["items"]
    {'type': 'string', 'enum': ['health']}
    """
    if menu is None or not menu.categories:
        return EXTRACTION_SCHEMA
    return _schema_with_names(menu.names, menu.max_per_item)


@lru_cache(maxsize=32)
def _schema_with_names(names: tuple[str, ...], max_items: int) -> dict[str, Any]:
    # One schema per menu, kept: every window of a reader asks with the same one.
    memory = EXTRACTION_SCHEMA["properties"]["memory_list"]["items"]
    entry: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": list(names)}}
    entry["maxItems"] = max_items
    items = {**memory, "properties": {**memory["properties"], "categories": entry}}
    memory_list = {**EXTRACTION_SCHEMA["properties"]["memory_list"], "items": items}
    properties = {**EXTRACTION_SCHEMA["properties"], "memory_list": memory_list}
    return {**EXTRACTION_SCHEMA, "properties": properties}


def _results_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """``{"results": [{...}]}``: the answer shape of the filter and rewrite passes."""
    item = {"type": "object", "properties": {"id": {"type": "integer"}, **properties}}
    item["required"] = ["id", *required]
    return {
        "type": "object",
        "properties": {"results": {"type": "array", "maxItems": MAX_MEMORIES, "items": item}},
        "required": ["results"],
    }


FILTER_SCHEMA = _results_schema(
    {"supported": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 300}},
    ["supported"],
)
REWRITE_SCHEMA = _results_schema(
    {"value": {"type": "string", "maxLength": MAX_VALUE_CHARS}}, ["value"]
)


class ContractError(ValueError):
    """The answer does not follow the contract (not an object, no memory list, no usable
    memory in a non-empty list); the client re-asks the model with this message."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters (at a word boundary when one is near), and
    whether it was cut. The schema's length limits are not enforced by grammar-based servers,
    and a model can answer a megabyte in one value: keep the start, say it was clipped.

    Lone surrogates (a model's unpaired ``"\\ud800"`` escape) become U+FFFD: an item holding
    one could never be written as UTF-8."""
    if not text.isascii():
        text = _LONE_SURROGATE.sub("\ufffd", text)
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ", limit - limit // 8)
    return (cut[:space] if space > 0 else cut).rstrip(), True


def read_results(parsed: Any) -> list[dict[str, Any]]:
    """The ``results`` of a filter or rewrite answer: entries with an integer ``id``."""
    results = parsed.get("results") if isinstance(parsed, Mapping) else None
    if not isinstance(results, list):
        raise ContractError('the answer must be a JSON object with a "results" list')
    return [
        r
        for r in results
        if isinstance(r, dict) and isinstance(r.get("id"), int) and not isinstance(r["id"], bool)
    ]


@dataclass
class ExtractedMemory:
    """One memory as the model stated it, after repair. ``importance`` and ``valid_from`` are
    ``None`` where the model gave none (or one that could not be read); a naive ``valid_from``
    takes its zone from the cited messages when the item is made."""

    key: str
    value: str
    memory_type: MemoryType
    tags: list[str]
    source_ids: list[int]
    repairs: list[str] = field(default_factory=list)
    importance: Importance | None = None
    valid_from: datetime | None = None
    categories: list[str] = field(default_factory=list)


@dataclass
class Extraction:
    """A window's extraction: its memories and summary; ``over_limit`` counts the memories past
    :data:`MAX_MEMORIES` that were not kept (the schema asks for at most that many)."""

    memories: list[ExtractedMemory]
    summary: str
    over_limit: int = 0


def memory_type_from(value: Any) -> MemoryType | None:
    """The memory type named by ``value`` (English or Chinese, any case), or ``None``."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text in CHINESE_TYPES:
        return CHINESE_TYPES[text]
    return _BY_LOWER.get(text.lower().replace(" ", ""))


def _int_ids(raw: Any) -> list[int]:
    items = raw if isinstance(raw, list) else [raw]
    ids = []
    for item in items:
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            ids.append(item)
        elif isinstance(item, str) and item.strip().lstrip("[#").rstrip("]").isdigit():
            ids.append(int(item.strip().lstrip("[#").rstrip("]")))
    return ids


def _category_key(name: str) -> str:
    """A name as the menu spells names: ``"Travel places"`` -> ``"travel_places"``."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def read_categories(raw: Any, menu: CategoryMenu | None) -> tuple[list[str], list[str]]:
    """The category names of one memory's answer that ``menu`` offers (spelling forgiven:
    case, spaces, dashes), first ones first, at most ``menu.max_per_item``; and the repairs:
    ``categories`` when a name was not offered (or not a string), ``clipped`` when more were
    given than allowed. Without a menu the field is ignored.

    >>> menu = CategoryMenu((("health", "."), ("work", ".")), 1)
    >>> read_categories(["Health", "hobbies", "work"], menu)
    (['health'], ['categories', 'clipped'])
    """
    if menu is None or raw is None:
        return [], []
    offered = set(menu.names)
    given = raw if isinstance(raw, list) else [raw]
    known = [_category_key(n) for n in given if isinstance(n, str)]
    kept = list(dict.fromkeys(n for n in known if n in offered))
    repairs = ["categories"] if len(known) != len(given) or len(kept) < len(set(known)) else []
    if len(kept) > menu.max_per_item:
        repairs.append("clipped")
    return kept[: menu.max_per_item], repairs


def _read_memory(
    raw: Any, valid: set[int], menu: CategoryMenu | None = None
) -> ExtractedMemory | None:
    """One entry of ``memory_list`` repaired, or ``None`` when it holds no usable memory."""
    if isinstance(raw, str) and raw.strip():
        raw = {"value": raw}
    if not isinstance(raw, Mapping):
        return None
    value = raw.get("value")
    if not isinstance(value, str) or not any(ch.isalnum() for ch in value):
        return None  # nothing a memory could say: "", "][", "..."
    repairs: list[str] = []
    memory_type = memory_type_from(raw.get("memory_type"))
    if memory_type is None:
        repairs.append("memory_type")
        memory_type = MemoryType.LONG_TERM
    key = raw.get("key")
    if not isinstance(key, str) or not key.strip():
        repairs.append("key")
        key = value.strip()[:60]
    tags_raw = raw.get("tags", [])
    tags = (
        [t.strip() for t in tags_raw if isinstance(t, str) and t.strip()]
        if isinstance(tags_raw, list)
        else []
    )
    if isinstance(tags_raw, list) and len(tags) != len(tags_raw):
        repairs.append("tags")
    ids = _int_ids(raw.get("source_ids", []))
    cited = [i for i in dict.fromkeys(ids) if i in valid]
    if len(cited) != len(ids):
        repairs.append("source_ids")
    value, value_clipped = clip_text(value.strip(), MAX_VALUE_CHARS)
    if value_clipped:
        repairs.append("value_clipped")
    key, key_clipped = clip_text(key.strip(), MAX_KEY_CHARS)
    clipped_tags = [clip_text(t, MAX_TAG_CHARS) for t in tags[:MAX_TAGS]]
    if key_clipped or len(tags) > MAX_TAGS or any(c for _, c in clipped_tags):
        repairs.append("clipped")
    importance, bad_importance = read_importance(
        raw.get("importance"), raw.get("importance_reason")
    )
    if bad_importance:
        repairs.append("importance")
    valid_from, bad_valid_from = read_valid_from(raw.get("valid_from"))
    if bad_valid_from:
        repairs.append("valid_from")
    categories, category_repairs = read_categories(raw.get("categories"), menu)
    repairs.extend(r for r in category_repairs if r not in repairs)
    return ExtractedMemory(
        key=key,
        value=value,
        memory_type=memory_type,
        tags=[t for t, _ in clipped_tags],
        source_ids=cited,
        repairs=repairs,
        importance=importance,
        valid_from=valid_from,
        categories=categories,
    )


def read_extraction(
    parsed: Any, valid_ids: Sequence[int], menu: CategoryMenu | None = None
) -> Extraction:
    """Repair a parsed answer into an :class:`Extraction`; raise :class:`ContractError` when it
    has no memory list at all. ``menu``: the categories the prompt offered (without one, the
    memories' ``categories`` are ignored)."""
    if not isinstance(parsed, Mapping):
        raise ContractError(f"expected a JSON object, got {_json_type(parsed)}")
    raw_list = parsed.get("memory_list", parsed.get("memory list", parsed.get("memories")))
    if raw_list is None:
        raise ContractError('the answer has no "memory_list"')
    if not isinstance(raw_list, list):
        raise ContractError(f'"memory_list" must be a list, got {_json_type(raw_list)}')
    summary = parsed.get("summary")
    valid = set(valid_ids)
    memories = [m for m in (_read_memory(raw, valid, menu) for raw in raw_list) if m is not None]
    if raw_list and not memories:
        raise ContractError(
            f'none of the {len(raw_list)} entries of "memory_list" is an object with a '
            'non-empty string "value"'
        )
    summary_text = summary.strip() if isinstance(summary, str) else ""
    return Extraction(
        memories[:MAX_MEMORIES],
        clip_text(summary_text, MAX_SUMMARY_CHARS)[0],
        over_limit=max(0, len(memories) - MAX_MEMORIES),
    )


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages the model reads."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return "number" if isinstance(value, int | float) else type(value).__name__
