"""A user's categories over HTTP: as JSON for programs and the page, and as the Markdown files
an agent reads (``index.md``, then the one category file it needs; or in memU's layout,
``memu/memory.md`` and ``memu/skill.md``, whose relative links lead to ``memu/memory/<name>.md``
and ``memu/skill/<name>/SKILL.md`` under the same prefix).

Every user id the store accepts works here, ``team/ana`` included: ``user_id`` is the whole
path between ``/v1/users/`` and the last ``/categories``, ``/memory/<file>`` or ``/memu/``
(a file name never holds ``/``, a memU path never holds ``/memu/``, and ``categories`` is no
memory file: they never read alike). The one exception: the flat files of a user id ending
in ``/memu`` read as that user's prefix's memU files, so such ids use the memU layout.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from memreader.service.depends import Caller, HeldMemory, PathOwner, RequestDeadline, State
from memreader.service.problems import ProblemError, shown
from memreader.service.scope_walls import check_whole_owner
from memreader.service.state import json_response
from memreader.stores.shapes import iso

__all__ = ["router"]

router = APIRouter(tags=["categories"])
MARKDOWN = "text/markdown; charset=utf-8"


@router.get("/v1/users/{user_id:path}/categories")
async def categories(
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: PathOwner,
    memory: HeldMemory,
) -> Response:
    """The user's categories: name, description, summary (sentences citing items as
    ``[ref:ID]``), how it was made, and the ids of the active items each covers."""
    check_whole_owner(principal, "a user's categories")
    async with state.slots.hold(principal.name):
        found = await state.blocking(lambda: memory.categories(owner), "the categories", deadline)
    return json_response(
        {
            "user_id": owner,
            "categories": [
                {
                    "name": c.name,
                    "description": c.description,
                    "summary": c.summary,
                    "summary_kind": c.summary_kind,
                    "summary_note": c.summary_note,
                    "item_ids": list(c.item_ids),
                    "updated_at": iso(c.updated_at),
                }
                for c in found
            ],
        }
    )


@router.get("/v1/users/{user_id:path}/memu/{path:path}")
async def memu_file(
    path: str,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: PathOwner,
    memory: HeldMemory,
) -> Response:
    """A file of the user's memory in memU's layout, as ``memreader export-md --layout memu``
    writes it: ``memory.md`` (the categories, a line each, linking ``memory/<name>.md``),
    ``skill.md`` (the skills, linking ``skill/<name>/SKILL.md``), ``index/sources.md``, or one
    of the files they link."""
    check_whole_owner(principal, "a user's categories")
    async with state.slots.hold(principal.name):
        content = await state.blocking(
            lambda: memory.markdown_file(path, user_id=owner, layout="memu"),
            "the export",
            deadline,
        )
    if content is None:
        raise ProblemError(
            404,
            "not-found",
            "No such file",
            f"user {shown(owner)} has no memory file {shown(path)}; memory.md and skill.md "
            "link the files",
        )
    return Response(content, media_type=MARKDOWN)


@router.get("/v1/users/{user_id:path}/memory/{file_name}")
async def memory_file(
    file_name: str,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: PathOwner,
    memory: HeldMemory,
) -> Response:
    """``index.md`` (the categories, a line each) or ``<category>.md`` (its summary, then its
    items with their validity and sources), as ``memreader export-md`` writes them."""
    check_whole_owner(principal, "a user's categories")
    async with state.slots.hold(principal.name):
        content = await state.blocking(
            lambda: memory.markdown_file(file_name, user_id=owner), "the export", deadline
        )
    if content is None:
        raise ProblemError(
            404,
            "not-found",
            "No such file",
            f"user {shown(owner)} has no memory file {shown(file_name)}; index.md lists the files",
        )
    return Response(content, media_type=MARKDOWN)
