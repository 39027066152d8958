"""Where the Markdown export writes, and what it may touch there.

**Names.** Every name the export gives is safe on every OS
(:mod:`memreader.categories.markdown_names`). A file of the export is named by its path
relative to the user folder, ``/``-separated: ``work.md`` (the flat layout) or
``memory/work.md``, ``skill/deploy/SKILL.md`` (the memU layout,
:mod:`memreader.categories.markdown_memu`); only the export's own forms are ever taken from a
manifest, so a forged manifest cannot name ``../x`` or an absolute path.

**What the export owns.** Each user folder holds a manifest, ``.memreader-export.json``: the
name of every file the export wrote there, with the SHA-256 of the bytes it wrote. A file is
the export's own when the manifest lists it *and* it still holds those bytes; only such a file
is ever replaced or removed. Anything else in the folder is *foreign*: a hand-written
``notes.md``, a file of a category the user edited since, a folder (the export looks inside
only the subfolders its own files live in: ``memory/``, ``skill/<name>/``, ``index/``; a symlink
is never followed). The export refuses a user
folder holding foreign files (:class:`ForeignFilesError`, naming them) unless told
(``allow_foreign_files``: then they are left alone, and reported); and it refuses, whatever it
was told, to write over a foreign file whose name it needs, or to write into a folder whose
name a foreign file or symlink holds, compared case-blind (``Index.md`` is ``index.md`` on macOS
and Windows), unless that file already holds the very bytes the export
would write, which loses nothing. A file the export wrote and the user changed since is
foreign (the error lists it in ``edited`` too): kept, never overwritten. A temporary file a
killed export left (``.<name>.<random>.tmp``) is neither foreign nor deleted. Every user
folder is checked before any is written, so a refusal writes nothing. The output folder itself
may hold anything: the export only adds user folders to it.

**Crash safety.** Before writing, the manifest lists each file's new and old hashes; after the
files are written (in the order the layout gives: what an entry file links before the entry)
and stale ones removed (and the subfolders of its own that this left empty), only the new
ones. So a crash at any point leaves every file the export wrote listed with the bytes it
holds, and the next export goes on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from memreader.categories.markdown_names import (
    INDEX,
    category_file,
    portable_name_problem,
    user_folder,
)
from memreader.errors import SinkError
from memreader.files import FileRefused, fsync_folder, read_regular_file, write_atomic

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

#: The manifest of the files the export wrote, one per user folder.
MANIFEST = ".memreader-export.json"
_MANIFEST_FORMAT = "memreader-export"
_MANIFEST_MAX_BYTES = 4 * 1024 * 1024
# The most entries a user folder's walk lists (a folder of millions is refused, not read).
_MAX_ENTRIES = 200_000
# A path the manifest may list: the flat layout's index and category files, and the memU
# layout's entry files, indexes, category files and skill bundles. Nothing else is ever ours.
_CATEGORY = r"[a-z][a-z0-9_]{0,63}(?:\.category|-category)?\.md"
_OUR_NAME = re.compile(
    rf"index\.md|{_CATEGORY}|index/[a-z][a-z0-9_]{{0,63}}\.md|memory/{_CATEGORY}"
    r"|skill/[a-z0-9][a-z0-9-]{0,127}/SKILL\.md"
)
# What write_atomic leaves behind if the process dies mid-write: neither ours to delete nor
# the user's to count as foreign.
_OUR_TEMP = re.compile(
    r"\.(?:[A-Za-z][A-Za-z0-9_.-]{0,80}\.md|\.memreader-export\.json)\.[A-Za-z0-9_]{1,16}\.tmp"
)
_SHOWN = 10


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
        names = _names(folder, blocking or foreign)
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


def _names(folder: str, paths: Sequence[str]) -> str:
    shown = ", ".join(os.path.relpath(p, folder) if p != folder else p for p in paths[:_SHOWN])
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
    """One user folder's part of an export, checked (:func:`plan_folder`) before any write.
    ``files`` maps each relative path to its bytes, in the order they are written."""

    folder: str
    files: dict[str, bytes]
    owned: dict[str, str]  # our files there now: relative path -> the hash they hold
    foreign: list[str]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _path(folder: str, name: str) -> str:
    """The OS path of the relative path ``name`` (``/``-separated) in ``folder``."""
    return os.path.join(folder, *name.split("/"))


def _parents(name: str) -> list[str]:
    """The folders on the way to ``name``, outermost first: ``a/b/c.md`` -> ``a``, ``a/b``."""
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


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


def _entries(folder: str, ours: set[str]) -> Iterator[str]:
    """The relative paths in ``folder``: files, and anything that is not a folder of ours
    (a foreign folder, a symlink) as one entry; a folder on the way to one of ``ours`` (real,
    never a symlink) is walked instead. Temporary files and the manifest are left out.

    Raises:
        SinkError: a folder cannot be listed, or holds too many entries.
    """
    pending, seen = [""], 0
    while pending:
        prefix = pending.pop()
        where = _path(folder, prefix) if prefix else folder
        try:
            with os.scandir(where) as listing:
                found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
        except OSError as exc:
            raise SinkError(f"cannot list {where}: {exc.strerror or exc}") from None
        seen += len(found)
        if seen > _MAX_ENTRIES:
            raise SinkError(f"{folder} holds over {_MAX_ENTRIES} entries: not an export folder")
        for name, is_dir in sorted(found):
            if (not prefix and name == MANIFEST) or _OUR_TEMP.fullmatch(name):
                continue
            relative = f"{prefix}/{name}" if prefix else name
            if is_dir and relative in ours:
                pending.append(relative)
            else:
                yield relative


def plan_folder(folder: str, files: Mapping[str, bytes], *, allow_foreign: bool) -> FolderPlan:
    """Check ``folder`` for writing ``files`` (relative paths, see the module docstring).

    Raises:
        ForeignFilesError: it holds foreign files (and ``allow_foreign`` is false), or a foreign
            file stands where the export must write.
        SinkError: it cannot be listed, or is a symlink or a file.
    """
    if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
        raise SinkError(f"cannot write {folder}: a symlink or a file stands there")
    manifest = _read_manifest(folder)
    folders = {parent for name in (*files, *manifest) for parent in _parents(name)}
    names = list(_entries(folder, folders)) if os.path.isdir(folder) else []
    owned: dict[str, str] = {}
    foreign: list[str] = []
    edited: list[str] = []
    for name in names:
        # Only a name the manifest lists or the export writes is read: any other is foreign.
        known = name in manifest or name in files
        current = _current_hash(_path(folder, name)) if known else None
        if current is not None and current in manifest.get(name, ()):
            owned[name] = current
        elif current is not None and name in files and current == _digest(files[name]):
            owned[name] = current  # already the bytes the export writes: nothing is lost
        else:
            foreign.append(_path(folder, name))
            if name in manifest:
                edited.append(foreign[-1])
    # Compared case-blind: on macOS and Windows "Index.md" is the file "index.md". A foreign
    # entry where one of our folders goes blocks too.
    needed = {name.casefold() for name in files}
    needed |= {parent.casefold() for name in files for parent in _parents(name)}
    blocking = [
        path
        for path in foreign
        if os.path.relpath(path, folder).replace(os.sep, "/").casefold() in needed
    ]
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


def _make_parents(folder: str, name: str) -> None:
    """The folders on the way to ``name``, created where missing; one that is a symlink or a
    file now (swapped in since the check) is refused, never written through."""
    for parent in _parents(name):
        path = _path(folder, parent)
        try:
            os.mkdir(path)
        except FileExistsError:
            if os.path.islink(path) or not os.path.isdir(path):
                raise SinkError(f"cannot write {path}: a symlink or a file stands there") from None
        except OSError as exc:
            raise SinkError(f"cannot create {path}: {exc.strerror or exc}") from None


def _remove_empty_parents(folder: str, stale: Sequence[str], files: Mapping[str, bytes]) -> None:
    """The folders of its own that removing ``stale`` left empty, removed (deepest first); a
    folder still holding anything, or holding a file of this export, stays."""
    keep = {parent for name in files for parent in _parents(name)}
    emptied = {parent for name in stale for parent in _parents(name)} - keep
    for parent in sorted(emptied, key=lambda p: -p.count("/")):
        # Not empty (the user's files), or gone: left as it is.
        with contextlib.suppress(OSError):
            os.rmdir(_path(folder, parent))


def publish(plan: FolderPlan, report: ExportReport) -> None:
    """Write one checked folder: the manifest naming old and new bytes, the files in the plan's
    order (the entries that link them last), its own stale files removed, then the manifest
    naming only the new bytes.

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
    for name, data in files.items():
        if plan.owned.get(name) != new[name]:
            _make_parents(folder, name)
            _write(_path(folder, name), data)
    stale = sorted(name for name in plan.owned if name not in files)
    for name in stale:
        try:
            os.unlink(_path(folder, name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise SinkError(f"cannot remove {_path(folder, name)}: {exc.strerror or exc}") from None
    _remove_empty_parents(folder, stale, files)
    _write_manifest(folder, {name: [h] for name, h in new.items()})
    fsync_folder(folder)
    report.written += [_path(folder, name) for name in files]
    report.removed += [_path(folder, name) for name in stale]
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
