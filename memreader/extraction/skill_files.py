"""Writing one skill bundle to a local folder without ever leaving it: every step is relative to
an opened folder descriptor with ``O_NOFOLLOW`` (a symlink planted where the bundle goes is
refused), the target is checked after resolving, and the file is replaced atomically (a temporary
file, fsync, ``os.replace``). A path-based fallback serves platforms without ``dir_fd`` support.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence

from memreader.errors import SkillWriteError

__all__ = ["SKILL_FILE", "write_local"]

#: The file of a bundle, in its folder.
SKILL_FILE = "SKILL.md"

# O_NOFOLLOW refuses a symlink as the last component; O_CLOEXEC keeps the descriptors from
# leaking into child processes.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FDS = (
    _DIRECTORY != 0
    and os.open in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
)


def write_local(output: str, folders: Sequence[str], data: bytes) -> str:
    """Write ``data`` to ``<realpath(output)>/<folders...>/SKILL.md`` atomically, never through
    a symlink; the path written. ``folders`` are plain names (the owner's folder, the slug)."""
    try:
        os.makedirs(output, exist_ok=True)
        folder = os.path.realpath(output)
    except (OSError, ValueError) as exc:
        raise SkillWriteError(
            f"cannot create the skills folder {output}: {_os_problem(exc)}"
        ) from None
    skill_dir = os.path.join(folder, *folders)
    target = os.path.join(skill_dir, SKILL_FILE)
    # Defence in depth: slugs cannot name anything else, but check the names and the path.
    if (
        not folders
        or any(not name or name in (".", "..") or os.sep in name or "/" in name for name in folders)
        or os.path.commonpath([folder, os.path.realpath(skill_dir)]) != folder
    ):
        raise SkillWriteError(f"cannot write {target}: it is outside the skills folder")
    try:
        if _DIR_FDS:
            _write_with_dir_fds(folder, folders, data, target)
        else:  # platforms without dir_fd support (Windows)
            _write_by_path(skill_dir, data, target)
    except SkillWriteError:
        raise
    except OSError as exc:
        raise SkillWriteError(f"cannot write {target}: {_os_problem(exc)}") from None
    return target


def _open_folder(name: str, parent_fd: int, where: str) -> int:
    """Create (if missing) and open the folder ``name`` inside ``parent_fd``, never through a
    symlink."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent_fd)
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SkillWriteError(
                f"cannot write {where}: a folder on its way is a symlink or not a folder"
            ) from None
        raise


def _write_with_dir_fds(folder: str, folders: Sequence[str], data: bytes, target: str) -> None:
    """Every step relative to an opened folder, with O_NOFOLLOW: a symlink swapped in after a
    check cannot redirect the write."""
    dir_fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for name in folders:
            parent_fd, dir_fd = dir_fd, -1
            try:
                dir_fd = _open_folder(name, parent_fd, target)
            finally:
                os.close(parent_fd)
        _refuse_symlink(SKILL_FILE, dir_fd, target)
        tmp = f".{SKILL_FILE}.{secrets.token_hex(8)}.tmp"
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
            0o666,
            dir_fd=dir_fd,
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, SKILL_FILE, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        if dir_fd >= 0:
            os.close(dir_fd)


def _refuse_symlink(name: str, dir_fd: int, target: str) -> None:
    """A symlink where the bundle goes was planted there: refuse it (replacing it would be
    safe, but it says something is wrong with the folder)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise SkillWriteError(f"cannot write {target}: a symlink stands there")


def _write_by_path(skill_dir: str, data: bytes, target: str) -> None:
    """The same steps by path, where ``dir_fd`` is not supported."""
    if os.path.islink(skill_dir) or os.path.islink(os.path.dirname(skill_dir)):
        raise SkillWriteError(f"cannot write {target}: a folder on its way is a symlink")
    os.makedirs(skill_dir, exist_ok=True)
    if os.path.islink(target):
        raise SkillWriteError(f"cannot write {target}: a symlink stands there")
    tmp = os.path.join(skill_dir, f".{SKILL_FILE}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _os_problem(exc: BaseException) -> str:
    """An OS error in words, without repeating the path it quotes."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__
