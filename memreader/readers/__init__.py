"""Readers, registered by name: compositions of normalise, parse, window, extract, embed, emit."""

from __future__ import annotations

from memreader.readers.base import READERS, BaseMemReader, register_reader
from memreader.readers.simple import SimpleStructMemReader

__all__ = ["READERS", "BaseMemReader", "SimpleStructMemReader", "register_reader"]
