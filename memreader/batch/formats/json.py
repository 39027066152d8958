"""``format: json``: a list of scenes (each a list of messages or a record), one record, or one
flat scene (a list of messages)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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
from memreader.batch.formats.records import record_scene
from memreader.errors import InvalidSceneError

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = ["JsonFormat"]


@register_format("json")
class JsonFormat(JsonShapedFormat):
    """Scenes in one JSON document (see the module docstring)."""

    def scenes(
        self, data: Any, opened: OpenedInput, spec: InputSpec
    ) -> Iterator[Scene | BadRecord]:
        """Each scene of ``data``, or the bad record of why it is not one.

        Raises:
            InvalidSceneError: ``data`` is neither a list nor a record.
        """
        key = spec.mapping.messages if spec.mapping and spec.mapping.messages else "messages"
        if isinstance(data, Mapping):
            records: Sequence[Any] = [data]
        elif isinstance(data, list):
            flat = bool(data) and all(
                isinstance(item, Mapping) and key not in item for item in data
            )
            records = [data] if flat else data
        else:
            raise InvalidSceneError(
                f"{opened.key}: expected a list of scenes, one scene or one record, "
                f"got {type(data).__name__}"
            )
        for i, record in enumerate(records):
            yield checked_scene(i, f"scene {i}", partial(_record, record, opened, spec))


def _record(record: Any, opened: OpenedInput, spec: InputSpec) -> tuple[Any, dict[str, str]]:
    scene, obj = record_scene(record, spec.mapping)
    return scene, input_ids(spec, opened, obj)
