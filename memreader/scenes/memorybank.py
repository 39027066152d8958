"""Loaders for public chat corpora, for examples, tests and benchmarks."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from memreader.errors import InputError


def is_memorybank(data: Any) -> bool:
    """Whether ``data`` has the MemoryBank shape ``{user: {"history": {day: [pairs]}}}``."""
    return (
        isinstance(data, Mapping)
        and bool(data)
        and all(
            isinstance(v, Mapping) and isinstance(v.get("history"), Mapping) for v in data.values()
        )
    )


def memorybank_scenes(data: Mapping[str, Any]) -> dict[str, list[list[dict[str, str]]]]:
    """MemoryBank users' days as chat scenes: ``{user: [scene per day]}``.

    Each query is a user message and each response an assistant message; the day key becomes
    every message's ``chat_time`` (the corpus has no time of day, so none is invented).
    """
    if not is_memorybank(data):
        raise InputError("not a MemoryBank file: expected {user: {'history': {day: [pairs]}}}")
    users: dict[str, list[list[dict[str, str]]]] = {}
    for user, record in data.items():
        scenes = []
        for day, pairs in record["history"].items():
            where = f"user {user!r}, day {day!r}"
            if not isinstance(pairs, list):
                raise InputError(f"{where}: expected a list of pairs, got {type(pairs).__name__}")
            scene = []
            for i, pair in enumerate(pairs):
                if not isinstance(pair, Mapping):
                    raise InputError(f"{where}: pair {i} is not a mapping")
                for role, key in (("user", "query"), ("assistant", "response")):
                    text = pair.get(key)
                    if not isinstance(text, str):
                        # Skipping it would lose a message without a word.
                        raise InputError(
                            f"{where}, pair {i}: {key!r} must be a string, "
                            f"got {type(text).__name__}"
                        )
                    scene.append({"role": role, "content": text, "chat_time": day})
            if scene:
                scenes.append(scene)
        users[str(user)] = scenes
    return users


def load_memorybank(path: str | os.PathLike[str]) -> dict[str, list[list[dict[str, str]]]]:
    """Load a MemoryBank JSON file (as ``data/memorybank`` holds) as scenes per user."""
    with open(path, encoding="utf-8") as handle:
        return memorybank_scenes(json.load(handle))
