"""A local output folder: temporary files live in the folder itself (``.<name>.<random>.tmp``),
so publishing is an atomic rename, made durable by an fsync of the folder."""

from __future__ import annotations

import logging
import os
import re
import time

from memreader.batch.sinks.folders import (
    OutputFolder,
    check_name,
    os_problem,
    remove_quietly,
    text_type,
)
from memreader.errors import SinkError
from memreader.files import fsync_folder

__all__ = ["LocalFolder"]

logger = logging.getLogger(__name__)

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
