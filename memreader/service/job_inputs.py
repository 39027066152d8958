"""Where a job's inputs may point: a path inside one of the operator's input roots, and a
user the key may write.

>>> from pathlib import Path
>>> resolve_inside(Path("/srv/in"), "chats/a.json", "inputs[0]")
PosixPath('/srv/in/chats/a.json')
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memreader.service.keys import Principal
from memreader.service.problems import ProblemError

__all__ = ["own_user", "resolve_inside"]

_GLOB = frozenset("*?[")


def resolve_inside(root: Path, relative: str, where: str) -> Path:
    """``root / relative``, resolved (symlinks followed), which must lie inside ``root``.

    Raises:
        ProblemError: 403, an absolute path, ``..``, a glob, a hidden name, or a path that
            resolves outside ``root``.
    """

    def refused(why: str) -> ProblemError:
        return ProblemError(403, "path-not-allowed", "Path not allowed", f"{where}.path: {why}")

    if "\0" in relative or os.path.isabs(relative) or "://" in relative:
        raise refused("must be a path relative to the input root")
    if _GLOB & set(relative):
        raise refused("globs are not accepted over HTTP; name a file or a folder")
    parts = Path(relative).parts
    if any(part == ".." for part in parts):
        raise refused("must not hold '..'")
    if any(part.startswith(".") and part != "." for part in parts):
        raise refused("hidden files and folders are not inputs")
    resolved = (root / relative).resolve()
    if resolved != root and root not in resolved.parents:
        raise refused("resolves outside the input root")
    return resolved


def own_user(principal: Principal, user_id: dict[str, Any] | None, where: str) -> dict[str, Any]:
    """The ``user_id`` spec of a non-admin key's input: a constant it may use (its one user
    when the request names none)."""
    if user_id is None:
        only = principal.only_user()
        if only is not None:
            return {"from": "constant", "value": only}
    elif user_id.get("from") == "constant" and principal.may_use(str(user_id.get("value"))):
        return user_id
    raise ProblemError(
        403,
        "forbidden-user",
        "User not allowed",
        f"{where}.user_id: this key may write only its own users "
        f"({', '.join(sorted(principal.users))}); name one as "
        '{"from": "constant", "value": USER}',
    )
