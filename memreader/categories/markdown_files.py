"""Where the Markdown export writes, and what it may touch there.

**Names that are safe on every OS.** :func:`user_folder` and :func:`category_file` give names
that :func:`portable_name_problem` accepts: no character Windows refuses (``<>:"/\\|?*``,
controls), no trailing dot or space, no Windows device name as the part before the first dot
(``con``, ``prn``, ``aux``, ``nul``, ``com0``-``com9``, ``lpt0``-``lpt9``, any case: ``con.md``
and ``con.category.md`` are the console to Windows), at most 100 characters, and two distinct
categories or users never get names that differ only in case. Category names are
``[a-z][a-z0-9_]{0,63}``, so ``<name>.md`` is safe except for ``index`` (the index keeps
``index.md``; the category gets ``index.category.md``) and the device names (``con`` gets
``con-category.md``): both forms hold a character no category name holds (``.`` or ``-``),
so they never meet another category's file.

**What the export owns.** Each user folder holds a manifest, ``.memreader-export.json``: the
name of every file the export wrote there, with the SHA-256 of the bytes it wrote. A file is
the export's own when the manifest lists it *and* it still holds those bytes; only such a file
is ever replaced or removed. Anything else in the folder is *foreign*: a hand-written
``notes.md``, a file of a category the user edited since, a folder. The export refuses a user
folder holding foreign files (:class:`ForeignFilesError`, naming them) unless told
(``allow_foreign_files``: then they are left alone, and reported); and it refuses, whatever it
was told, to write over a foreign file whose name it needs, compared case-blind (``Index.md``
is ``index.md`` on macOS and Windows), unless that file already holds the very bytes the export
would write, which loses nothing. A file the export wrote and the user changed since is
foreign (the error lists it in ``edited`` too): kept, never overwritten. A temporary file a
killed export left (``.<name>.<random>.tmp``) is neither foreign nor deleted. Every user
folder is checked before any is written, so a refusal writes nothing. The output folder itself
may hold anything: the export only adds user folders to it.

**Crash safety.** Before writing, the manifest lists each file's new and old hashes; after the
files are written and stale ones removed, only the new ones. So a crash at any point leaves
every file the export wrote listed with the bytes it holds, and the next export goes on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memreader.errors import SinkError, StoreError
from memreader.files import FileRefused, fsync_folder, read_regular_file, write_atomic
from memreader.stores.category_types import CATEGORY_NAME

__all__ = [
    "INDEX",
    "MANIFEST",
    "ExportReport",
    "FolderPlan",
    "ForeignFilesError",
    "category_file",
    "plan_folder",
    "portable_name_problem",
    "publish",
    "user_folder",
]

logger = logging.getLogger(__name__)

#: The index's file name.
INDEX = "index.md"
#: The manifest of the files the export wrote, one per user folder.
MANIFEST = ".memreader-export.json"
_MANIFEST_FORMAT = "memreader-export"
_MANIFEST_MAX_BYTES = 4 * 1024 * 1024
_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)
_WINDOWS_BAD = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_MAX_NAME = 100
_PLAIN_USER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SLUG_CHARS = 40
_HASH_CHARS = 16
# A name the manifest may list: the index and every form category_file gives.
_OUR_NAME = re.compile(r"index\.md|[a-z][a-z0-9_]{0,63}(?:\.category|-category)?\.md")
# What write_atomic leaves behind if the process dies mid-write: neither ours to delete nor
# the user's to count as foreign.
_OUR_TEMP = re.compile(
    r"\.(?:[a-z][a-z0-9_.-]{0,80}\.md|\.memreader-export\.json)\.[A-Za-z0-9_]{1,16}\.tmp"
)
_SHOWN = 10


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
    if name.split(".", 1)[0].rstrip(" ").lower() in _DEVICES:
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
    if _PLAIN_USER.fullmatch(user_id) and user_id not in _DEVICES:
        return user_id
    digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    # Accented letters keep their base letter (é -> e); other scripts become "_".
    text = unicodedata.normalize("NFKD", user_id).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9_-]+", "_", text.lower())[:_SLUG_CHARS].strip("_-") or "user"
    if slug in _DEVICES:  # "con.<hash>" is still a device name to Windows
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
    return f"{name}-category.md" if name in _DEVICES else f"{name}.md"


class ForeignFilesError(SinkError):
    """A user folder of the export holds files the export did not write (or that were changed
    since it wrote them). ``folder`` is the folder; ``foreign`` every such file's path;
    ``edited`` those of them the export wrote but that no longer hold what it wrote;
    ``blocking`` those the export would have to overwrite (refused even when foreign files are
    allowed)."""

    def __init__(
        self,
        folder: str,
        foreign: Sequence[str],
        blocking: Sequence[str],
        edited: Sequence[str] = (),
    ) -> None:
        self.folder = folder
        self.foreign = tuple(foreign)
        self.blocking = tuple(blocking)
        self.edited = tuple(edited)
        names = _names(blocking or foreign)
        if blocking:
            message = (
                f"{folder}: the export would overwrite {len(blocking)} file(s) it did not "
                f"write or that were changed since: {names}; move them away to export here"
            )
        else:
            message = (
                f"{folder} holds {len(foreign)} file(s) the export did not write (or that were "
                f"changed since): {names}; the export never deletes them, and writes beside "
                "them only when told (export-md --allow-foreign-files)"
            )
        super().__init__(message)


def _names(paths: Sequence[str]) -> str:
    shown = ", ".join(os.path.basename(p) or p for p in paths[:_SHOWN])
    return shown + (f" (+{len(paths) - _SHOWN} more)" if len(paths) > _SHOWN else "")


@dataclass
class ExportReport:
    """What an export did: ``written`` (every file of the export, written or already
    current), ``removed`` (its own stale files) and ``kept`` (foreign files left alone)."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


@dataclass
class FolderPlan:
    """One user folder's part of an export, checked (:func:`plan_folder`) before any write."""

    folder: str
    files: dict[str, bytes]
    owned: dict[str, str]  # our files there now: name -> the hash they hold
    foreign: list[str]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(folder: str) -> dict[str, set[str]]:
    """The manifest's names -> hashes; empty when there is none or it is not one of ours (then
    every file there counts as foreign: nothing is deleted on the word of a broken file)."""
    path = os.path.join(folder, MANIFEST)
    try:
        data = json.loads(read_regular_file(path, _MANIFEST_MAX_BYTES, nofollow=True))
    except (FileNotFoundError, NotADirectoryError):  # no folder, or a file where one goes
        return {}
    except (OSError, FileRefused, ValueError) as exc:
        logger.warning("%s is not a readable export manifest (%s): ignored", path, exc)
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or data.get("format") != _MANIFEST_FORMAT:
        logger.warning("%s is not an export manifest: ignored", path)
        return {}
    return {
        name: {h for h in hashes if isinstance(h, str)}
        for name, hashes in files.items()
        if isinstance(name, str) and _OUR_NAME.fullmatch(name) and isinstance(hashes, list)
    }


_OPEN = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _current_hash(path: str) -> str | None:
    """The SHA-256 of the regular file ``path``, read in pieces (a huge file costs no memory);
    ``None`` when it is a symlink (never followed), anything but a regular file, or unreadable."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, _OPEN | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _is_ours_temp(name: str) -> bool:
    return bool(_OUR_TEMP.fullmatch(name))


def plan_folder(folder: str, files: Mapping[str, bytes], *, allow_foreign: bool) -> FolderPlan:
    """Check ``folder`` for writing ``files`` (see the module docstring).

    Raises:
        ForeignFilesError: it holds foreign files (and ``allow_foreign`` is false), or a foreign
            file stands where the export must write.
        SinkError: it cannot be listed, or is a symlink or a file.
    """
    if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
        raise SinkError(f"cannot write {folder}: a symlink or a file stands there")
    try:
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    except OSError as exc:
        raise SinkError(f"cannot list {folder}: {exc.strerror or exc}") from None
    manifest = _read_manifest(folder)
    owned: dict[str, str] = {}
    foreign: list[str] = []
    edited: list[str] = []
    for name in names:
        if name == MANIFEST or _is_ours_temp(name):
            continue
        # Only a name the manifest lists or the export writes is read: any other is foreign.
        known = name in manifest or name in files
        current = _current_hash(os.path.join(folder, name)) if known else None
        if current is not None and current in manifest.get(name, ()):
            owned[name] = current
        elif current is not None and name in files and current == _digest(files[name]):
            owned[name] = current  # already the bytes the export writes: nothing is lost
        else:
            foreign.append(os.path.join(folder, name))
            if name in manifest:
                edited.append(foreign[-1])
    # Compared case-blind: on macOS and Windows "Index.md" is the file "index.md".
    ours = {name.casefold() for name in files}
    blocking = [p for p in foreign if os.path.basename(p).casefold() in ours]
    if blocking or (foreign and not allow_foreign):
        raise ForeignFilesError(folder, foreign, blocking, edited)
    if edited:
        logger.warning("%s: %d exported file(s) changed since: kept", folder, len(edited))
    return FolderPlan(folder, dict(files), owned, foreign)


def _write_manifest(folder: str, hashes: Mapping[str, Sequence[str]]) -> None:
    """The manifest naming ``hashes``; left alone when it already says exactly that."""
    files = {name: sorted(set(h)) for name, h in sorted(hashes.items())}
    data = (
        json.dumps({"format": _MANIFEST_FORMAT, "version": 1, "files": files}, indent=1) + "\n"
    ).encode()
    path = os.path.join(folder, MANIFEST)
    try:
        if read_regular_file(path, len(data), nofollow=True) == data:
            return
    except (OSError, FileRefused):
        pass
    _write(path, data)


def publish(plan: FolderPlan, report: ExportReport) -> None:
    """Write one checked folder: the manifest naming old and new bytes, the category files, the
    index, its own stale files removed, then the manifest naming only the new bytes.

    Raises:
        SinkError: a folder or file cannot be written or removed.
    """
    folder, files = plan.folder, plan.files
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise SinkError(f"cannot create {folder}: {exc.strerror or exc}") from None
    new = {name: _digest(data) for name, data in files.items()}
    during = {name: [h] for name, h in plan.owned.items()}
    for name, h in new.items():
        during.setdefault(name, []).append(h)
    _write_manifest(folder, during)
    order = [*sorted(name for name in files if name != INDEX), INDEX]
    for name in order:
        if plan.owned.get(name) != new[name]:
            _write(os.path.join(folder, name), files[name])
    stale = sorted(name for name in plan.owned if name not in files)
    for name in stale:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise SinkError(
                f"cannot remove {os.path.join(folder, name)}: {exc.strerror or exc}"
            ) from None
    _write_manifest(folder, {name: [h] for name, h in new.items()})
    fsync_folder(folder)
    report.written += [os.path.join(folder, name) for name in order]
    report.removed += [os.path.join(folder, name) for name in stale]
    report.kept += plan.foreign
    if plan.foreign:
        logger.warning(
            "%s: left alone %d file(s) the export did not write", folder, len(plan.foreign)
        )


def _write(path: str, data: bytes) -> None:
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise SinkError(f"cannot write {path}: {exc.strerror or exc}") from None
