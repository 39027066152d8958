"""The job's manifest: for each input, its key, the sha256 of its content, the fingerprint of the
job that read it (:mod:`memreader.batch.fingerprint`) and its outcome, kept next to the outputs
(``_manifest.json``). A job run again skips only the inputs that are ``done`` with the same
content and the same fingerprint; it reads again those that failed, changed, or were read by a
different job (another reader config, mode, type, mapping...), and those it never finished.

The manifest is replaced atomically, at most about once a second while a job runs and once at
its end: a crash loses at most the last second's records, whose inputs are then redone (their
items have stable ids and their files are replaced whole, so nothing is duplicated).
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from memreader.batch.job import MANIFEST_FILE
from memreader.batch.places.base import OutputFolder
from memreader.batch.results import InputResult
from memreader.errors import ConfigError

__all__ = ["MANIFEST", "Manifest", "Why"]

MANIFEST = MANIFEST_FILE
# 2 added each input's fingerprint; the entries of a version 1 manifest have none, so each of
# its inputs is read once more (the job that read it is unknown).
_VERSION = 2
_READABLE = (1, 2)

#: Why an input is read: never read (or not finished), read but failed, its content changed,
#: or read by a job with another fingerprint.
Why = Literal["new", "failed", "content", "job"]


class Manifest:
    """The records of one output folder (see the module docstring)."""

    def __init__(
        self, folder: OutputFolder, *, restart: bool = False, every_s: float = 1.0
    ) -> None:
        self.folder = folder
        self.every_s = every_s
        self.entries: dict[str, InputResult] = {}
        self._dirty = False
        self._written = 0.0
        if not restart:
            self._load()

    def _load(self) -> None:
        text = self.folder.read_text(MANIFEST)
        if text is None:
            return
        try:
            data = json.loads(text)
            inputs = data["inputs"]
            if data.get("version") not in _READABLE or not isinstance(inputs, dict):
                raise ValueError("unknown manifest version")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"the manifest {self.folder.location(MANIFEST)} cannot be read ({exc}); "
                "run with --restart to ignore it"
            ) from None
        self.entries = {key: InputResult.from_dict(key, entry) for key, entry in inputs.items()}

    def why_read(self, key: str, digest: str, fingerprint: str) -> Why | None:
        """Why ``key`` (with this content digest, for a job with this fingerprint) must be read;
        ``None`` when it is ``done`` already, with the same content, by the same job."""
        entry = self.entries.get(key)
        if entry is None:
            return "new"
        if entry.status != "done":
            return "failed"
        if entry.digest != digest:
            return "content"
        if entry.fingerprint != fingerprint:
            return "job"
        return None

    def record(self, result: InputResult) -> None:
        """Keep ``result``; written now if the last write is a second old."""
        self.entries[result.key] = result
        self._dirty = True
        if time.monotonic() - self._written >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Write the manifest if anything changed since the last write."""
        if not self._dirty:
            return
        payload: dict[str, Any] = {
            "version": _VERSION,
            "inputs": {key: self.entries[key].to_dict() for key in sorted(self.entries)},
        }
        self.folder.write_text(MANIFEST, json.dumps(payload, ensure_ascii=False, indent=1))
        self._dirty = False
        self._written = time.monotonic()
