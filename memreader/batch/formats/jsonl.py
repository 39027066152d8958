"""``format: jsonl``: one scene per line, a list of messages or a record (its messages under
``mapping.messages``, default ``messages``), streamed line by line in bounded memory. A line
that is not JSON, not UTF-8 or over the line limit is a bad record; blank lines are skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from memreader.batch.formats.base import (
    BadRecord,
    Format,
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

__all__ = ["JsonlFormat"]


@register_format("jsonl")
class JsonlFormat(Format):
    """One scene per line (see the module docstring)."""

    def read(self, opened: OpenedInput, spec: InputSpec) -> Iterator[Scene | BadRecord]:
        """The scene of each non-blank line, or the bad record of why it is not one."""
        index = 0
        for number, line in opened.raw_lines():
            label = f"line {number}"
            if line is None:
                yield BadRecord(
                    index, label, "InvalidSceneError", f"over {opened.max_line_bytes} bytes"
                )
                index += 1
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                yield BadRecord(index, label, "InvalidSceneError", "not UTF-8")
                index += 1
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            yield checked_scene(index, label, partial(_line_scene, text, opened, spec))
            index += 1


def _line_scene(text: str, opened: OpenedInput, spec: InputSpec) -> tuple[Any, dict[str, str]]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSceneError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise InvalidSceneError("not JSON: nested too deeply") from None
    scene, obj = record_scene(record, spec.mapping)
    return scene, input_ids(spec, opened, obj)
