"""The names the Markdown export gives its folders and files, safe on every OS.

:func:`user_folder` and :func:`category_file` give names that :func:`portable_name_problem`
accepts: no character Windows refuses (``<>:"/\\|?*``, controls), no trailing dot or space, no
Windows device name as the part before the first dot (``con``, ``prn``, ``aux``, ``nul``,
``com0``-``com9``, ``lpt0``-``lpt9``, any case: ``con.md`` and ``con.category.md`` are the
console to Windows), at most 100 characters, and two distinct categories or users never get
names that differ only in case. Category names are ``[a-z][a-z0-9_]{0,63}``, so ``<name>.md``
is safe except for ``index`` (the index keeps ``index.md``; the category gets
``index.category.md``) and the device names (``con`` gets ``con-category.md``): both forms hold
a character no category name holds (``.`` or ``-``), so they never meet another category's
file. A skill's folder is :func:`~memreader.extraction.skills.skill_slug` of its name
(``[a-z0-9-]``, never a device name).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memreader.errors import StoreError
from memreader.stores.category_types import CATEGORY_NAME

__all__ = ["DEVICES", "INDEX", "category_file", "portable_name_problem", "user_folder"]

#: The flat layout's index file name.
INDEX = "index.md"
#: The names Windows reserves in every folder, whatever the extension.
DEVICES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)
_WINDOWS_BAD = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_MAX_NAME = 100
_PLAIN_USER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SLUG_CHARS = 40
_HASH_CHARS = 16


def portable_name_problem(name: str) -> str | None:
    """Why ``name`` is not a file name every OS takes as it is; ``None`` when it is.

    >>> portable_name_problem("work.md"), portable_name_problem("Nul.tar.gz")
    (None, 'a Windows device name')
    """
    if not name or name in (".", ".."):
        return "empty, or . or .."
    if len(name) > _MAX_NAME:
        return f"over {_MAX_NAME} characters"
    if _WINDOWS_BAD.search(name):
        return "a character Windows refuses"
    if name[-1] in ". ":
        return "a trailing dot or space"
    if name.split(".", 1)[0].rstrip(" ").lower() in DEVICES:
        return "a Windows device name"
    return None


def user_folder(user_id: str) -> str:
    """The folder name of ``user_id``: the id itself when it is plain (``[a-z0-9]`` then up to
    63 of ``[a-z0-9_-]``, not a device name), else a readable slug, a dot and 16 hex digits of
    the id's SHA-256. Plain names hold no dot and hashed ones do, so the two kinds never meet;
    both are lower case; none starts with ``.`` or ``_`` (the batch job's own files do).

    >>> user_folder("ana"), user_folder("../x"), user_folder("CON")
    ('ana', 'x.d6b96a97d147daaa', 'con_.a3dbc4b644a9a2c5')
    """
    if _PLAIN_USER.fullmatch(user_id) and user_id not in DEVICES:
        return user_id
    digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    # Accented letters keep their base letter (é -> e); other scripts become "_".
    text = unicodedata.normalize("NFKD", user_id).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9_-]+", "_", text.lower())[:_SLUG_CHARS].strip("_-") or "user"
    if slug in DEVICES:  # "con.<hash>" is still a device name to Windows
        slug += "_"
    return f"{slug}.{digest}"


def category_file(name: str) -> str:
    """The file name of the category ``name`` (see the module docstring).

    >>> category_file("work"), category_file("index"), category_file("con")
    ('work.md', 'index.category.md', 'con-category.md')

    Raises:
        StoreError: ``name`` is not a category name (the store holds something it should not).
    """
    if not CATEGORY_NAME.fullmatch(name):
        raise StoreError(f"the store holds a category with a bad name: {name!r}")
    if name == "index":
        return "index.category.md"
    return f"{name}-category.md" if name in DEVICES else f"{name}.md"
