"""The names of batch components: the input formats and the sinks a job may name, registered by
name (built-ins and plugins alike, through the ``memreader.plugins`` entry points).

A leaf of :mod:`memreader.batch`: the job's specs check their ``format`` fields here without
importing any format or sink, and the bases (:mod:`memreader.batch.formats.base`,
:mod:`memreader.batch.sinks.base`) register into these registries and hand out their classes,
checked to be what they must be.

>>> check_format_name("JSONL"), check_sink_name("parquet")
('jsonl', 'parquet')
"""

from __future__ import annotations

from memreader.errors import ConfigError
from memreader.registry import Registry

__all__ = ["FORMATS", "SINKS", "check_format_name", "check_sink_name"]

#: Input format classes by name (lower-case); the built-ins are imported on first use.
FORMATS: Registry[type] = Registry(
    "input format",
    lazy={
        name: f"memreader.batch.formats.{name}"
        for name in ("auto", "json", "jsonl", "memorybank", "locomo", "document")
    },
)

#: Sink classes by name (lower-case); the built-ins are imported on first use.
SINKS: Registry[type] = Registry(
    "sink",
    lazy={
        "jsonl": "memreader.batch.sinks.jsonl",
        "markdown": "memreader.batch.sinks.markdown",
        "parquet": "memreader.batch.sinks.parquet",
        "store": "memreader.batch.sinks.store",
    },
)


def check_format_name(name: str) -> str:
    """``name`` as the registry stores it (lower-case), without importing the format.

    Raises:
        ConfigError: no format of that name is known (the message lists the known ones).
    """
    return _known(FORMATS, name, "input format")


def check_sink_name(name: str) -> str:
    """``name`` as the registry stores it (lower-case), without importing the sink.

    Raises:
        ConfigError: no sink of that name is known (the message lists the known ones).
    """
    return _known(SINKS, name, "sink")


def _known(registry: Registry[type], name: str, kind: str) -> str:
    known = registry.names()
    key = name.strip().lower()
    if key not in known:
        raise ConfigError(f"unknown {kind} {name!r}; known: {', '.join(known)}")
    return key
