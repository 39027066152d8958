"""Where batch jobs write: sinks registered by name (``jsonl``, ``parquet``, ``store``, and
whatever plugins register through the ``memreader.plugins`` entry points), each over the job's
output folder (a local folder or ``s3://bucket/prefix``) that holds the manifest, errors and
summary (a place's write side: :mod:`memreader.batch.places`). See
:mod:`~memreader.batch.sinks.base` for the base classes and :mod:`~memreader.batch.sinks.files`
for sinks that write files.
"""

from __future__ import annotations

from memreader.batch.places.base import OutputFolder
from memreader.batch.registries import SINKS, check_sink_name
from memreader.batch.sinks.base import (
    InputWriter,
    Sink,
    build_sink,
    output_stem,
    register_sink,
    sink_class,
)
from memreader.errors import SinkError

__all__ = [
    "SINKS",
    "InputWriter",
    "OutputFolder",
    "Sink",
    "SinkError",
    "build_sink",
    "check_sink_name",
    "output_stem",
    "register_sink",
    "sink_class",
]
