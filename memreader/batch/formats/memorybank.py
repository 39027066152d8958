"""``format: memorybank``: users' ``history`` by day (``{user: {"history": {day: [pairs]}}}``),
one scene per day. Unless the spec sets them, ``user_id`` is the user (the corpus key,
surrounding spaces removed) and ``session_id`` ``memorybank:<user>``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from memreader.batch.formats.base import (
    BadRecord,
    JsonShapedFormat,
    Scene,
    checked_scene,
    input_ids,
    register_format,
)
from memreader.errors import InvalidSceneError
from memreader.scenes.memorybank import is_memorybank, memorybank_scenes

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = ["MemoryBankFormat"]


@register_format("memorybank")
class MemoryBankFormat(JsonShapedFormat):
    """A MemoryBank corpus (see the module docstring)."""

    @classmethod
    def fits(cls, data: Any) -> bool:
        """Whether ``data`` is shaped like a MemoryBank corpus."""
        return is_memorybank(data)

    def scenes(
        self, data: Any, opened: OpenedInput, spec: InputSpec
    ) -> Iterator[Scene | BadRecord]:
        """One scene per user and day; a user without a history is a bad record.

        Raises:
            InvalidSceneError: ``data`` is not a mapping of users.
        """
        if not isinstance(data, Mapping) or not data:
            raise InvalidSceneError(
                f"{opened.key}: not a MemoryBank file: "
                "expected {user: {'history': {day: [pairs]}}}"
            )
        index = 0
        for user_key, record in data.items():
            user = str(user_key).strip() or str(user_key)
            if not isinstance(record, Mapping) or not isinstance(record.get("history"), Mapping):
                yield BadRecord(
                    None, f"user {user}", "InvalidSceneError", "no 'history' mapping of days"
                )
                continue
            defaults = (user, f"memorybank:{user}")
            for day, pairs in record["history"].items():
                if isinstance(pairs, list) and not pairs:
                    continue  # a day without pairs is no scene (as in memorybank_scenes)
                make = partial(_day, user, day, pairs, record, defaults, opened, spec)
                yield checked_scene(index, f"user {user}, day {day}", make)
                index += 1


def _day(
    user: str,
    day: Any,
    pairs: Any,
    record: Mapping[str, Any],
    defaults: tuple[str, str],
    opened: OpenedInput,
    spec: InputSpec,
) -> tuple[Any, dict[str, str]]:
    # One day at a time through memorybank_scenes: a malformed day is a bad record of its own
    # instead of failing the whole file.
    scenes = memorybank_scenes({user: {"history": {day: pairs}}})[user]
    return scenes[0], input_ids(spec, opened, record, defaults)
