"""Batch input formats, registered by name: ``auto``, ``json``, ``jsonl``, ``memorybank``,
``locomo`` and ``document`` (one small module each), and whatever plugins register through the
``memreader.plugins`` entry points. See :mod:`memreader.batch.formats.base` for the base class.
"""

from __future__ import annotations

from memreader.batch.formats.base import (
    BadRecord,
    Format,
    JsonShapedFormat,
    Scene,
    checked_scene,
    format_class,
    input_ids,
    register_format,
)
from memreader.batch.registries import FORMATS, check_format_name

__all__ = [
    "FORMATS",
    "BadRecord",
    "Format",
    "JsonShapedFormat",
    "Scene",
    "check_format_name",
    "checked_scene",
    "format_class",
    "input_ids",
    "register_format",
]
