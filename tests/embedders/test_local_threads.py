"""The local embedder's ONNX Runtime session under ``memreader serve --workers N``: each
worker's session takes its share of the cores, and no thread spins waiting for work."""

from __future__ import annotations

import pytest

from memreader import cores
from memreader.cores import PINNED_ENV, PROCESSES_ENV, available_cores, core_share
from memreader.embedders import LocalEmbedder
from memreader.embedders import local as local_module


def test_each_process_takes_its_share_of_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cores, "available_cores", lambda: 8)
    monkeypatch.delenv(PROCESSES_ENV, raising=False)
    monkeypatch.delenv(PINNED_ENV, raising=False)
    assert core_share() == 8
    for processes, share in (("2", 4), ("3", 2), ("8", 1), ("16", 1), ("junk", 8), ("0", 8)):
        monkeypatch.setenv(PROCESSES_ENV, processes)
        assert core_share() == share
    # A worker its supervisor pinned runs on its own cores: its affinity is its share.
    monkeypatch.setenv(PINNED_ENV, "1")
    assert core_share() == 8


@pytest.mark.slow
def test_a_workers_session_runs_its_share_without_spinning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "_SESSIONS", {})  # a session made under this setting
    monkeypatch.setenv(PROCESSES_ENV, str(available_cores()))
    options = LocalEmbedder()._session.get_session_options()
    assert options.intra_op_num_threads == 1
    for pool in ("intra_op", "inter_op"):
        assert options.get_session_config_entry(f"session.{pool}.allow_spinning") == "0"
