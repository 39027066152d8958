"""Local places: inputs in the local file system (:class:`LocalFiles`: a file, a folder, its files
recursively and sorted, without hidden files and folders, or a glob such as ``data/**/*.jsonl``,
opened so that nothing but a regular file is read) and the local output folder
(:class:`LocalFolder`: temporary files live in the folder itself, ``.<name>.<random>.tmp``, so
publishing is an atomic rename, made durable by an fsync of the folder)."""

from __future__ import annotations

import glob
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath

from memreader.batch.places.base import (
    FileSource,
    InputRef,
    OutputFolder,
    Read,
    check_name,
    os_problem,
    remove_quietly,
    text_type,
)
from memreader.errors import ConfigError, InputError, SinkError
from memreader.files import FileRefused, fsync_folder, read_regular_file
from memreader.scenes.text_checks import printable

__all__ = ["LocalFiles", "LocalFolder", "resolve_path", "walk_folder"]

logger = logging.getLogger(__name__)

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


def resolve_path(path: str, base_dir: str | None) -> str:
    """``path`` relative to ``base_dir`` (URLs and absolute paths as they are).

    >>> resolve_path("chats/a.jsonl", "/jobs"), resolve_path("s3://b/k", "/jobs")
    ('/jobs/chats/a.jsonl', 's3://b/k')
    """
    if "://" in path or os.path.isabs(path) or not base_dir:
        return path
    return os.path.join(base_dir, path)


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


class LocalFiles(FileSource):
    """The local inputs of a job: relative paths are relative to ``base_dir`` (the job file's
    folder).

    :attr:`hidden` holds the hidden files and folders passed over since :meth:`forget_hidden`.
    """

    def __init__(self, base_dir: str | None) -> None:
        self._base_dir = base_dir
        self.hidden: set[str] = set()

    def forget_hidden(self) -> None:
        """Start counting hidden files afresh (a new discovery)."""
        self.hidden.clear()

    def discover(self, index: int, path: str, within: str | None, output: str) -> list[InputRef]:
        """The files ``path`` names; the files right in the job's output folder are left out.

        Raises:
            InputError: nothing matches, a missing path, or only the job's own output.
            ConfigError: a URL that is not ``s3://``.
        """
        where = f"inputs.{index}"
        resolved = resolve_path(path, self._base_dir)
        if "://" in resolved:
            raise ConfigError(f"{where}.path: inputs are local paths or s3:// URLs")
        files = self._files(where, path, os.path.abspath(os.path.expanduser(resolved)))
        if "://" not in output:
            folder = os.path.realpath(output)
            files = [f for f in files if os.path.dirname(os.path.realpath(f)) != folder]
            if not files:
                raise InputError(f"{where}: {path!r} holds only the job's own output")
        if within is not None:
            files = self._inside(where, within, files)
        base = os.path.abspath(self._base_dir) if self._base_dir else None
        refs = []
        for file in dict.fromkeys(files):
            try:
                size: int | None = os.stat(file).st_size
            except OSError:
                size = None
            refs.append(InputRef(_relative_key(file, base), index, file, size, within))
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
        within = ref.within
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


# Our temporary files: ``.<final name>.<12 hex>.tmp`` (see OutputFolder.temp_file); nothing else
# is cleaned.
_TEMP_FILE = re.compile(r"^\.[A-Za-z0-9._-]+\.[0-9a-f]{12}\.tmp$")
_STALE_TEMP_S = 24 * 3600.0


class LocalFolder(OutputFolder):
    """The folder ``path`` (absolute), created if missing. Temporary files of ours in it older
    than a day (left by a killed run) are removed; younger ones may belong to a run still going
    and are left alone.

    Raises:
        SinkError: the folder cannot be created.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise SinkError(f"cannot create {path}: {os_problem(exc)}") from None
        self._clean_temp_files()

    def location(self, name: str) -> str:
        """The path of ``name``."""
        return os.path.join(self.path, name)

    def temp_dir(self) -> str:
        """The folder itself (so the rename is atomic)."""
        return self.path

    def publish(self, temp: str, name: str, content_type: str) -> str:
        """Rename ``temp`` to ``name`` (atomic), then fsync the folder."""
        location = self.location(name)
        try:
            os.replace(temp, location)
        except OSError as exc:
            raise SinkError(f"cannot write {location}: {os_problem(exc)}") from None
        fsync_folder(self.path)
        return location

    def names_like(self, start: str) -> list[str]:
        """The names in the folder that start with ``start``."""
        try:
            names = os.listdir(self.path)
        except OSError as exc:
            raise SinkError(f"cannot list {self.path}: {os_problem(exc)}") from None
        return [name for name in names if name.startswith(start)]

    def remove(self, name: str) -> None:
        """Unlink ``name``."""
        try:
            os.unlink(self.location(name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise SinkError(
                f"cannot remove the stale {self.location(name)}: {os_problem(exc)}"
            ) from None

    def write_text(self, name: str, text: str) -> str:
        """Write ``name`` through a temporary file renamed over it."""
        check_name(name)
        temp = self.temp_file(name)
        try:
            with open(temp, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            remove_quietly(temp)
            raise SinkError(f"cannot write {self.location(name)}: {os_problem(exc)}") from None
        return self.publish(temp, name, text_type(name))

    def read_text(self, name: str) -> str | None:
        """The UTF-8 text of ``name``."""
        check_name(name)
        try:
            with open(self.location(name), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SinkError(f"cannot read {self.location(name)}: {os_problem(exc)}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SinkError(f"cannot read {self.location(name)}: not UTF-8 text") from None

    def _clean_temp_files(self) -> None:
        """Remove our temporary files older than a day (a killed run's leftovers); younger ones
        may be another worker's, still being written."""
        cutoff = time.time() - _STALE_TEMP_S
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            return
        for entry in entries:
            if not _TEMP_FILE.match(entry.name):
                continue
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError:
                logger.debug("could not remove the stale temporary file %s", entry.path)
