"""``POST /v1/read`` and ``POST /v1/refine``: items from scenes or from fast items, stored when
asked; NDJSON (one scene per line) when the client accepts ``application/x-ndjson``.

Each request's deadline (admission's: ``request_timeout_s`` from its first byte) reaches the
reader and the store. Past it the work is stopped and waited for before the 504 (and before
the request's slot is given back); a write that committed is reported, one that did not left
nothing stored. Reads take one of the service's ``max_concurrent_reads`` turns.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response, StreamingResponse

from memreader.calls.deadlines import Deadline, in_thread
from memreader.items import TextualMemoryItem
from memreader.service.depends import Caller, RequestDeadline, State
from memreader.service.limits import within_deadline
from memreader.service.models import ReadRequest, RefineRequest
from memreader.service.problems import problem_for
from memreader.service.scope_walls import check_whole_owner, scope_of
from memreader.service.state import ServiceState, json_response
from memreader.steps.report import ReadReport
from memreader.stores.shapes import event_json

__all__ = ["router"]

router = APIRouter()
NDJSON = "application/x-ndjson"


def _items_json(items: Sequence[TextualMemoryItem], embeddings: bool) -> list[dict[str, Any]]:
    out = []
    for item in items:
        data = item.to_dict()
        if not embeddings:
            data["metadata"].pop("embedding", None)
        out.append(data)
    return out


@router.post("/v1/read", tags=["read"])
async def read(
    body: ReadRequest,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
) -> Response:
    """Read scenes (chat) or documents (doc) into memory items, as ``get_memory`` does: one
    list of items per scene, the call's report and, with ``"store": true``, the write events.
    With ``Accept: application/x-ndjson`` each scene's items come as one line as soon as that
    scene is read (``{"scene": i, "items": [...]}`` or ``{"scene": i, "problem": {...}}``),
    then ``{"done": true, "report": ..., "events": ...}``."""
    state.check_user(principal, body.info.get("user_id"), "info.user_id")
    agent_id, task_id = scope_of(principal, body.info.get("agent_id"), body.info.get("task_id"))
    # A limited key's read is written into its task (its one task when info names none).
    body.info.update({k: v for k, v in (("agent_id", agent_id), ("task_id", task_id)) if v})
    if body.store:
        _ = state.memory  # 409 before any work when there is no store
    streamed = NDJSON in request.headers.get("accept", "")

    async def answer() -> Response:
        if streamed:
            return await _ndjson_answer(state, body, request, deadline)
        return await _items_answer(
            state,
            body.store,
            body.include_embeddings,
            deadline,
            "the read",
            lambda report: state.reader.aget_memory(
                body.scenes,
                type=body.type,
                info=body.info,
                mode=body.mode,
                custom_tags=body.custom_tags,
                report=report,
                deadline=deadline,
            ),
        )

    return await state.idempotent(request, principal, "read", answer)


async def _items_answer(
    state: ServiceState,
    store: bool,
    embeddings: bool,
    deadline: Deadline,
    what: str,
    run: Callable[[ReadReport], Awaitable[list[list[TextualMemoryItem]]]],
) -> Response:
    """``run(report)`` (a read or a refinement) in a read turn and within ``deadline``, its
    items stored when ``store`` says so; the answer: one list of items per scene or input, the
    report and the write events."""
    report = ReadReport()

    async def work() -> tuple[list[list[TextualMemoryItem]], Any]:
        items = await run(report)
        state.metrics.observe_read(report, sum(len(group) for group in items))
        return items, await _store(state, items, deadline) if store else None

    async with state.read_turn(deadline, what):
        items, events = await within_deadline(work(), deadline, what)
    return json_response(
        {
            "items": [_items_json(group, embeddings) for group in items],
            "report": report.to_dict(),
            "events": events,
        }
    )


async def _store(
    state: ServiceState, items: Sequence[Sequence[TextualMemoryItem]], deadline: Deadline
) -> Any:
    """Write ``items`` through the service's ``Memory`` within ``deadline`` (in a worker
    thread: the store blocks); the events as JSON. Stopped, the write rolls back; a write that
    committed is returned even when the request was cancelled meanwhile (what is stored is
    always reported)."""
    flat = [item for scene in items for item in scene]
    memory = state.memory

    def write() -> list[Any]:
        with memory.within(deadline):
            return memory.write(flat)

    events = await in_thread(write, keep_result=True)
    return [event_json(event) for event in events]


async def _ndjson_answer(
    state: ServiceState, body: ReadRequest, request: Request, deadline: Deadline
) -> Response:
    scenes = body.scenes if isinstance(body.scenes, list) else [body.scenes]
    if body.type == "chat" and scenes and all(isinstance(m, dict) for m in scenes):
        scenes = [scenes]  # one flat list of messages is one scene, as in get_memory
    # The request's slot (admission's) is held until the last line is sent, or until the
    # client went away and the scene being read has stopped.
    lines = _scene_lines(state, body, scenes, deadline)
    if request.headers.get("idempotency-key") is None:
        return StreamingResponse(lines, media_type=NDJSON)
    # A kept answer must be whole: gather the lines, answer them at once.
    return Response(b"".join([line async for line in lines]), media_type=NDJSON)


async def _scene_lines(
    state: ServiceState, body: ReadRequest, scenes: list[Any], deadline: Deadline
) -> AsyncIterator[bytes]:
    """Each scene read alone (its items' sources say its index in the request); a scene that
    fails is that scene's line (a problem), the others go on. One deadline for the whole
    answer: a scene past it is a 504 line, and so is each after; a scene whose line is a
    problem left nothing stored."""
    total = ReadReport(mode=body.mode)
    events: list[Any] = []
    for index, scene in enumerate(scenes):
        try:
            async with state.read_turn(deadline, "the read"):
                items, report, written = await within_deadline(
                    _read_scene(state, body, scene, index, deadline), deadline, "the read"
                )
            total.windows.extend(report.windows)
            events.extend(written)
            line: dict[str, Any] = {
                "scene": index,
                "items": _items_json(items, body.include_embeddings),
            }
        except Exception as exc:  # this scene's line (a problem); the others go on
            line = {"scene": index, "problem": problem_for(exc).body()}
        yield (json.dumps(line, ensure_ascii=False) + "\n").encode()
    done = {"done": True, "report": total.to_dict(), "events": events if body.store else None}
    yield (json.dumps(done, ensure_ascii=False) + "\n").encode()


async def _read_scene(
    state: ServiceState, body: ReadRequest, scene: Any, index: int, deadline: Deadline
) -> tuple[list[TextualMemoryItem], ReadReport, list[Any]]:
    """One scene of an NDJSON read: its items, its report and, stored, its write events."""
    report = ReadReport()
    items = await state.reader.aget_memory(
        [scene],
        type=body.type,
        info=body.info,
        mode=body.mode,
        custom_tags=body.custom_tags,
        report=report,
        deadline=deadline,
    )
    for item in items[0]:
        for source in item.metadata.sources:
            source.scene_index = index
    for window in report.windows:
        window.scene_index = index
    state.metrics.observe_read(report, len(items[0]))
    written = await _store(state, items, deadline) if body.store else []
    return items[0], report, written


@router.post("/v1/refine", tags=["read"])
async def refine(
    body: RefineRequest,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
) -> Response:
    """Refine stored fast items into fine items (``fine_transfer_simple_mem``): one list per
    input item; with ``"store": true`` also written. Every item must belong to a user this
    key may use."""
    check_whole_owner(principal, "refining stored items")
    for n, raw in enumerate(body.items):
        metadata = raw.get("metadata")
        user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
        state.check_user(principal, user_id, f"items[{n}].metadata.user_id")
    if body.store:
        _ = state.memory  # 409 before any work when there is no store

    async def answer() -> Response:
        return await _items_answer(
            state,
            body.store,
            body.include_embeddings,
            deadline,
            "the refinement",
            lambda report: state.reader.afine_transfer_simple_mem(
                body.items,
                type=body.type,
                custom_tags=body.custom_tags,
                report=report,
                deadline=deadline,
            ),
        )

    return await state.idempotent(request, principal, "refine", answer)
