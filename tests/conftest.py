"""Fixtures every test folder uses: a reader with the hash embedder, and the factory's cache
cleared after each test. A fixture only one folder uses lives in that folder's conftest.py;
the constants tests share (``HASH_EMBEDDER``, ``INFO``, the shipped data) are in
:mod:`tests.common`, which test modules import (never this module). ``moto_server`` (one moto
S3 server for the run, tests/s3_server.py) is here so that every module's ``moto_s3`` finds it."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from memreader import MemReaderFactory, SimpleStructMemReader, SimpleStructMemReaderConfig
from tests.common import HASH_EMBEDDER
from tests.s3_server import moto_server

__all__ = ["moto_server"]  # the run's moto server, for every module's moto_s3

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Property tests check what holds, not how fast: on a loaded machine (two test workers beside
# other work) hypothesis's per-example deadline and its too-slow health check failed tests
# whose properties held. Tests that set their own settings keep them.
settings.register_profile("memreader", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memreader")


@pytest.fixture
def reader() -> SimpleStructMemReader:
    """A reader with the hash embedder and small windows."""
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER, window={"max_tokens": 256, "overlap_tokens": 32}
    )
    return SimpleStructMemReader(config)


@pytest.fixture(autouse=True)
def _fresh_factory() -> Any:
    yield
    MemReaderFactory.clear_cache()
