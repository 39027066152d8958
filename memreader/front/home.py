"""Where ``Memory()`` keeps its memories when no store is named: a per-user data folder.

The folder is ``$MEMREADER_HOME`` when set; else the platform's user data folder with
``memreader`` under it: ``$XDG_DATA_HOME/memreader`` (when that is an absolute path), else
``~/.local/share/memreader`` on Linux and other Unix systems, ``~/Library/Application
Support/memreader`` on macOS and ``%APPDATA%\\memreader`` on Windows. The store is the embedded
SQLite file ``memories.db`` in it (the folder is created on first use).

>>> default_store_url().startswith("sqlite:///") and default_store_url().endswith("memories.db")
True
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["HOME_ENV", "STORE_FILE", "data_home", "default_store_url"]

#: The environment variable that names the data folder.
HOME_ENV = "MEMREADER_HOME"
#: The SQLite file ``Memory()`` opens in the data folder.
STORE_FILE = "memories.db"


def data_home() -> Path:
    """The data folder (see the module docstring), absolute; not created here."""
    named = os.environ.get(HOME_ENV)
    if named:
        return Path(named).expanduser().resolve()
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "memreader"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "memreader"
    xdg = os.environ.get("XDG_DATA_HOME")
    # The XDG rule: a relative value is invalid and ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "memreader"
    return Path.home() / ".local" / "share" / "memreader"


def default_store_url() -> str:
    """The ``sqlite://`` URL of ``memories.db`` in :func:`data_home` (the folder is not
    created here: :class:`~memreader.front.memory.Memory` creates it)."""
    return "sqlite:///" + str(data_home() / STORE_FILE)
