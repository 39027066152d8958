"""The output files of ``memreader read`` (``-o``, ``--report``), written atomically.

Each file is opened, so checked, before any work, written to a temporary file beside the
target, and renamed over it only when the whole run succeeded: a failed run never leaves a
half-written file that looks complete.
"""

from __future__ import annotations

import argparse
import logging
import os
import stat
import tempfile
from contextlib import ExitStack
from typing import IO

from memreader.errors import MemReaderError

__all__ = ["AtomicOutput", "OutputError", "open_outputs"]

logger = logging.getLogger(__name__)


class OutputError(MemReaderError):
    """An output file (``-o``, ``--report``) cannot be written."""


class AtomicOutput:
    """An output file, written atomically: opened (so checked) before any work, written to a
    temporary file beside the target, and renamed over it by :meth:`commit`. A target that is
    not a regular file (``/dev/stdout``, a pipe) is written directly.
    """

    def __init__(self, path: str, what: str) -> None:
        self.what = what
        self.path = path
        self._temp: str | None = None
        self.target = target = os.path.realpath(path)  # replace a symlink's target, not the link
        try:
            info: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise OutputError(f"cannot write {what} {path}: {exc.strerror}") from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise OutputError(f"cannot write {what} {path}: it is a directory")
        try:
            if info is not None and not stat.S_ISREG(info.st_mode):
                # /dev/stdout, a pipe: nothing to replace, and nowhere to put a temporary file.
                self.handle: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115
                return
            if info is not None and not os.access(target, os.W_OK):
                raise PermissionError(13, "Permission denied")
            parent = os.path.dirname(target)
            os.makedirs(parent, exist_ok=True)
            fd, self._temp = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=parent
            )
            self.handle = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"cannot write {what} {path}: {exc.strerror}") from None

    def commit(self) -> None:
        """Make the written content the target's, all at once."""
        try:
            self.handle.close()
            if self._temp is not None:
                if os.path.exists(self.target):
                    os.chmod(self._temp, stat.S_IMODE(os.stat(self.target).st_mode))
                else:
                    os.chmod(self._temp, 0o666 & ~_umask())
                os.replace(self._temp, self.target)
                self._temp = None
        except OSError as exc:
            raise OutputError(f"cannot write {self.what} {self.path}: {exc.strerror}") from None

    def discard(self) -> None:
        """Drop what was written (the target keeps its old content, if any)."""
        self.handle.close()
        if self._temp is not None:
            try:
                os.unlink(self._temp)
            except OSError:
                logger.warning("could not remove the temporary file %s", self._temp)
            self._temp = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def open_outputs(stack: ExitStack, args: argparse.Namespace) -> list[AtomicOutput]:
    """The ``-o`` and ``--report`` files the command line names (in that order), each discarded
    when ``stack`` closes unless committed first."""
    outputs = []
    for path, what in ((args.output, "output"), (args.report, "report")):
        if path is not None:
            output = AtomicOutput(path, what)
            stack.callback(output.discard)
            outputs.append(output)
    return outputs
