"""Readers, registered by name: each a config class and a pipeline preset."""

from __future__ import annotations

from memreader.readers.base import READERS, BaseMemReader, register_reader
from memreader.readers.multimodal import (
    MultiModalStructMemReader,
    MultiModalStructMemReaderConfig,
)
from memreader.readers.simple import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.readers.strategy import StrategyStructMemReader, StrategyStructMemReaderConfig

__all__ = [
    "READERS",
    "BaseMemReader",
    "MultiModalStructMemReader",
    "MultiModalStructMemReaderConfig",
    "SimpleStructMemReader",
    "SimpleStructMemReaderConfig",
    "StrategyStructMemReader",
    "StrategyStructMemReaderConfig",
    "register_reader",
]
