"""Answers carry no absolute server paths: a job's summary and problem name its files relative
to the job's input root, and the service's store and state folder by name only.

>>> scrub = PathScrub({"/srv/data": "", "/srv/state/job1": "job"})
>>> scrub("cannot read /srv/data/chats/a.json")
'cannot read chats/a.json'
>>> scrub("in /srv/state/job1/_summary.json or /etc/memreader/keys.yaml")
'in job/_summary.json or keys.yaml'
>>> scrub({"outputs": ["sqlite:////srv/m.db"]})
{'outputs': ['sqlite:///m.db']}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["PathScrub"]

#: An absolute POSIX path not inside a URL's authority (``http://host/x`` is left alone): its
#: folders, then its last name (kept).
_ABSOLUTE = re.compile(r"(?<![\w.:/-])/(?:[^\s/'\"(),;]+/)+")
#: The folders of a SQLite file URL's absolute path (``sqlite:////srv/m.db``).
_SQLITE = re.compile(r"(sqlite:///)/(?:[^\s/'\"(),;]+/)+")


class PathScrub:
    """Replaces each of ``prefixes`` (an absolute path, to what it reads as: ``""`` makes the
    paths under it relative), then any other absolute path by its last name."""

    def __init__(self, prefixes: Mapping[str, str]) -> None:
        # Longest first, so a root inside another is replaced as itself.
        self.prefixes = sorted(
            ((path.rstrip("/"), name) for path, name in prefixes.items() if path.strip("/")),
            key=lambda pair: -len(pair[0]),
        )

    def text(self, text: str) -> str:
        """``text`` without absolute paths."""
        for path, name in self.prefixes:
            text = text.replace(path + "/", f"{name}/" if name else "")
            text = re.sub(re.escape(path) + r"(?![\w.-])", name or ".", text)
        return _ABSOLUTE.sub("", _SQLITE.sub(r"\1", text))

    def __call__(self, value: Any) -> Any:
        """``value`` (JSON-ready: strings, lists, dicts) with every string scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        return value
