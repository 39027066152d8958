"""The folder of a SQLite store's file, made when the store is opened: a store named in a folder
that does not exist yet (``sqlite:///~/notes/memreader/memories.db``, a fresh data folder) is
created with its missing folders, instead of failing with SQLite's "unable to open database
file".

>>> import tempfile, os
>>> top = tempfile.mkdtemp()
>>> make_folder(os.path.join(top, "a", "b", "memories.db"))
>>> os.path.isdir(os.path.join(top, "a", "b"))
True
"""

from __future__ import annotations

import os

from memreader.errors import StoreError

__all__ = ["make_folder"]


def make_folder(path: str) -> None:
    """Make the folder of the SQLite file ``path`` (and the folders above it) when missing;
    ``:memory:`` and a file in the working folder need none.

    Raises:
        StoreError: the folder cannot be made (a file is in the way, no permission); the
            message names the folder and the store's file.
    """
    folder = os.path.dirname(path)
    if path == ":memory:" or not folder or os.path.isdir(folder):
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise StoreError(
            f"cannot make the folder {folder} of the sqlite store {path}: a file is in the way"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise StoreError(
            f"cannot make the folder {folder} of the sqlite store {path}: {reason}"
        ) from None
