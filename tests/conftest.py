"""Fixtures every test folder uses: a reader with the hash embedder, and the factory's cache
cleared after each test. A fixture only one folder uses lives in that folder's conftest.py;
the constants tests share (``HASH_EMBEDDER``, ``INFO``, the shipped data) are in
:mod:`tests.common`, which test modules import (never this module). ``moto_server`` (one moto
S3 server for the run, tests/s3_server.py) is here so that every module's ``moto_s3`` finds it.
``kept_logging`` is for the modules that run a script's ``main()`` in the test process."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
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


def _the_librarys(part: object) -> bool:
    """Whether a filter or handler is memreader's own (log_scrub's secret scrubbing, the batch's
    notes filter): the process keeps those once added, as in a user's process."""
    return type(part).__module__.partition(".")[0] == "memreader"


@pytest.fixture
def kept_logging() -> Iterator[None]:
    """Every logger's level, ``disabled`` and ``propagate`` as they were before the test, and
    no filter or handler it added (memreader's own and pytest's aside), for a test that runs a
    script's ``main()`` in this process: a script sets up logging for its whole run, and left
    in place that setup reaches every later test of the worker (benchmarks/evidence_retrieval.py
    adds a filter to the embed step's logger that lets each message through once per process:
    it hid the warning that tests/batch/test_batch_quiet.py expects from a new reader)."""
    manager = logging.Logger.manager
    loggers = [logging.getLogger()]
    loggers += [log for log in list(manager.loggerDict.values()) if isinstance(log, logging.Logger)]
    before = [
        (log, log.level, list(log.filters), list(log.handlers), log.disabled, log.propagate)
        for log in loggers
    ]
    disabled = manager.disable
    yield
    logging.disable(disabled)
    for log, level, filters, handlers, was_disabled, propagate in before:
        log.setLevel(level)  # setLevel, not .level =: it clears the loggers' cached answers
        for added in [f for f in log.filters if f not in filters and not _the_librarys(f)]:
            log.removeFilter(added)
        for handler in [h for h in log.handlers if h not in handlers]:
            # pytest's capture of the test's phase is pytest's to remove
            if not _the_librarys(handler) and not type(handler).__module__.startswith("_pytest"):
                log.removeHandler(handler)
                handler.close()
        log.disabled, log.propagate = was_disabled, propagate
