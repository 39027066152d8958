"""Inputs in the local file system: a file, a folder (its files, recursively, sorted, without
hidden files and folders) or a glob (``data/**/*.jsonl``), opened so that nothing but a regular
file is read."""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath
from typing import TYPE_CHECKING

from memreader.batch.inputs.storage import InputRef, InputStorage, Read
from memreader.errors import ConfigError, InputError
from memreader.files import FileRefused, read_regular_file
from memreader.scenes.text_checks import printable

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec, JobConfig

__all__ = ["LocalStorage"]

# Opening must never block (a FIFO waits for a writer) nor make a terminal ours; the fstat of
# the opened descriptor then refuses anything but a regular file (see memreader.files).
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_GLOB_MAGIC = re.compile(r"[*?\[]")


def _relative_key(location: str, base: str | None) -> str:
    """The input's name in the manifest, errors and summary: a file name that is not valid
    UTF-8 (``os`` gives its bytes as lone surrogates) is written with escapes, so that every
    record naming it can be written; the file itself is opened by its real path."""
    if base is not None:
        rel = os.path.relpath(location, base)
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            return printable(PurePath(rel).as_posix())
    return printable(location)


def _is_inside(path: str, root: str) -> bool:
    """Whether ``path``, symlinks followed, is ``root`` (resolved) or lies under it."""
    resolved = os.path.realpath(path)
    return resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep)


def walk_folder(folder: str) -> tuple[list[str], list[str]]:
    """The files under ``folder``, recursively, sorted, and the hidden files and folders
    (``.git``, ``.DS_Store``) passed over: they are not inputs (a hidden folder is not walked).
    Symlinked folders are not followed (no cycles)."""
    found = []
    hidden: list[str] = []
    for root, dirs, files in os.walk(folder):
        hidden.extend(os.path.join(root, d) for d in dirs if d.startswith("."))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = os.path.join(root, name)
            if name.startswith("."):
                hidden.append(path)
            elif os.path.isfile(path):
                found.append(path)
    return sorted(found), hidden


class LocalStorage(InputStorage):
    """The local inputs of ``job`` (relative paths from ``job.base_dir``).

    :attr:`hidden` holds the hidden files and folders passed over since :meth:`forget_hidden`.
    """

    def __init__(self, job: JobConfig) -> None:
        self._job = job
        self.hidden: set[str] = set()

    def forget_hidden(self) -> None:
        """Start counting hidden files afresh (a new discovery)."""
        self.hidden.clear()

    def discover(self, index: int, spec: InputSpec) -> list[InputRef]:
        """The files ``spec`` names; the files right in the job's output folder are left out.

        Raises:
            InputError: nothing matches, a missing path, or only the job's own output.
            ConfigError: a URL that is not ``s3://``.
        """
        where = f"inputs.{index}"
        path = self._job.resolve(spec.path)
        if "://" in path:
            raise ConfigError(f"{where}.path: inputs are local paths or s3:// URLs")
        files = self._files(where, spec.path, os.path.abspath(os.path.expanduser(path)))
        output = self._job.output_location()
        if "://" not in output:
            folder = os.path.realpath(output)
            files = [f for f in files if os.path.dirname(os.path.realpath(f)) != folder]
            if not files:
                raise InputError(f"{where}: {spec.path!r} holds only the job's own output")
        if spec.within is not None:
            files = self._inside(where, spec.within, files)
        base = os.path.abspath(self._job.base_dir) if self._job.base_dir else None
        refs = []
        for file in dict.fromkeys(files):
            try:
                size: int | None = os.stat(file).st_size
            except OSError:
                size = None
            refs.append(InputRef(_relative_key(file, base), index, file, size))
        return refs

    def _files(self, where: str, given: str, path: str) -> list[str]:
        """The files of ``path`` (``given``: the spec's own words, for messages)."""
        if _GLOB_MAGIC.search(given):
            files: list[str] = []
            for match in sorted(glob.glob(path, recursive=True)):
                if os.path.isdir(match):
                    files.extend(self._walk(match))
                elif os.path.isfile(match):
                    files.append(match)
            if not files:
                raise InputError(f"{where}: no file matches {given!r}")
            return files
        if os.path.isdir(path):
            files = self._walk(path)
            if not files:
                raise InputError(f"{where}: no file in folder {given!r}")
            return files
        if os.path.isfile(path):
            return [path]
        if os.path.lexists(path):
            raise InputError(f"{where}: {given!r} is not a regular file or a folder")
        raise InputError(f"{where}: no such file or folder {given!r}")

    def _inside(self, where: str, within: str, files: list[str]) -> list[str]:
        """The files that lie inside ``within`` once symlinks are followed; the others are
        passed over (counted with the hidden ones), or refused when nothing is left."""
        root = os.path.realpath(within)
        kept = [f for f in files if _is_inside(f, root)]
        self.hidden.update(f for f in files if not _is_inside(f, root))
        if not kept:
            raise InputError(f"{where}: no file of it lies inside {within!r} (symlinks followed)")
        return kept

    def _check_inside(self, ref: InputRef) -> None:
        within = self._job.inputs[ref.spec_index].within
        if within is not None and not _is_inside(ref.location, os.path.realpath(within)):
            raise InputError(f"{ref.key}: resolves outside {within!r}; not read")

    def _walk(self, folder: str) -> list[str]:
        files, hidden = walk_folder(folder)
        self.hidden.update(hidden)
        return files

    @contextmanager
    def open(self, ref: InputRef) -> Iterator[Read]:
        """A read over the regular file ``ref`` (anything else is refused after opening)."""
        self._check_inside(ref)
        try:
            fd = os.open(ref.location, _OPEN_FLAGS)
        except OSError as exc:
            raise InputError(f"{ref.key}: cannot be opened ({exc.strerror})") from None
        with os.fdopen(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(f"{ref.key}: not a regular file")

            def read_local(size: int) -> bytes:
                try:
                    data: bytes = handle.read(size)
                except OSError as exc:
                    raise InputError(f"{ref.key}: cannot be read ({exc.strerror})") from None
                return data

            yield read_local

    def read_whole(self, ref: InputRef, max_bytes: int) -> bytes:
        """The whole regular file, refused past ``max_bytes`` (see :mod:`memreader.files`)."""
        self._check_inside(ref)
        try:
            return read_regular_file(ref.location, max_bytes)
        except FileRefused as exc:
            raise InputError(f"{ref.key}: {exc.reason}") from None
        except OSError as exc:
            raise InputError(f"{ref.key}: cannot be read ({exc.strerror})") from None
