"""The store over HTTP: search, one memory, its history, forgetting a source, direct writes
(add one memory, update its text, delete it) and recording use (``GET`` of one memory records
it; ``POST /v1/memories:used`` names the memories an agent was handed otherwise).

Each route calls the service's :class:`~memreader.Memory` on the store threads (not where
reads run), within the request's deadline; the request's slot is admission's
(:mod:`memreader.service.admission`); who calls, the owner and the deadline are dependencies
(:mod:`memreader.service.depends`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from memreader.calls.deadlines import Deadline
from memreader.front.memory import Memory
from memreader.service.depends import (
    BodyCall,
    Caller,
    HeldMemory,
    QueryOwner,
    QueryScope,
    RequestDeadline,
    Scope,
    State,
    body_call,
    body_owner,
    body_scope,
    owner_or_only_user,
)
from memreader.service.erasure import erased_texts, forgotten_texts
from memreader.service.keys import Principal
from memreader.service.models import (
    AddMemoryRequest,
    ForgetRequest,
    ListQuery,
    SearchRequest,
    UpdateMemoryRequest,
    UsedRequest,
)
from memreader.service.problems import ProblemError, shown
from memreader.service.scope_walls import check_change, check_whole_owner, key_sees, scope_of
from memreader.service.state import ServiceState, json_response
from memreader.stores import (
    EraseReceipt,
    HistoryEntry,
    SourceSelector,
    StoredMemory,
    WriteEvent,
)
from memreader.stores.borrowed import borrowed_reads
from memreader.stores.shapes import entry_json, event_json, hits_body, memory_json

__all__ = ["router"]

router = APIRouter(tags=["memories"])

#: The search parameters a cache key holds apart from the body's others: the owner and the
#: scope checked against the key (a limited key's default task is not in the body).
_NOT_IN_KEY = {"user_id", "agent_id", "task_id"}


@router.post("/v1/memories/search")
async def search(
    call: Annotated[BodyCall[SearchRequest], Depends(body_call(SearchRequest))],
    memory: HeldMemory,
) -> Response:
    """The ``k`` best memories of ``user_id`` for ``query``, best first, each with its score
    parts (relevance, similarity, text rank, importance, decay) and the passages of its text
    that matched; ``min_score`` drops hits less relevant than it."""
    # One dependency for the body, its owner and scope (the body validated once): this route
    # is the one served most often (depends.body_call).
    body, state, deadline, user_id = call.body, call.state, call.deadline, call.owner
    agent_id, task_id = call.scope
    # Looked up only now that the key may read user_id's memories; the key names the user,
    # the scope what it sees (a limited key's default task is not in the body).
    cache = state.search_cache
    key = (user_id, agent_id, task_id, body.model_dump_json(exclude=_NOT_IN_KEY))
    kept = None if body.rerank else cache.get(key)  # an LLM's order is not kept: it may fail
    if kept is not None:
        return Response(kept, media_type="application/json")
    # Read before the search runs: a write committed meanwhile makes this answer a miss.
    version, began = cache.version(), time.monotonic()
    filters = body.search_filters(agent_id, task_id)

    def answer() -> bytes:
        # Encoded on the store's thread, where the hits were just made: the event loop only
        # sends the bytes (it stays free for the other connections meanwhile). Borrowed: the
        # hits become JSON here and nothing changes them (memreader.stores.borrowed).
        with borrowed_reads():
            hits = memory.search(
                body.query, user_id=user_id, k=body.k, filters=filters, rerank=body.rerank
            )
            return hits_body(hits)  # json_body({"hits": [hit_json(hit) ...]}), made for less

    found = await state.blocking(answer, "the search", deadline)
    if not body.rerank:
        cache.put(key, version, found, began)
    return Response(found, media_type="application/json")


@router.get("/v1/memories")
async def list_memories(
    request: Request,
    query: Annotated[ListQuery, Query()],
    state: State,
    caller: Caller,
    deadline: RequestDeadline,
) -> Response:
    """``user_id``'s memories without a query (``Memory.get_all``), the most recently stored
    first, a page of at most ``limit``: ``{"memories": [...], "next_cursor": ...}``; pass
    ``next_cursor`` as ``cursor`` for the next page (``null``: the last). Filters as a
    search's, but those that rank."""
    user_id = owner_or_only_user(request, query.user_id)
    agent_id, task_id = scope_of(caller, query.agent_id, query.task_id)
    filters = query.search_filters(agent_id, task_id)
    memory = state.memory  # after the owner's wall: another key's user is 403, not 409
    page = await state.blocking(
        lambda: memory.get_all(
            user_id=user_id, filters=filters, limit=query.limit, cursor=query.cursor
        ),
        "the listing",
        deadline,
    )
    memories = [memory_json(memory) for memory in page]
    return json_response({"memories": memories, "next_cursor": page.next_cursor})


@router.get("/v1/memories/{memory_id}")
async def get_memory(
    memory_id: str,
    state: State,
    deadline: RequestDeadline,
    owner: QueryOwner,
    scope: QueryScope,
    memory: HeldMemory,
) -> Response:
    """One memory of ``user_id``, whatever its status (404 when that user has none such, or
    the scope asked for (``agent_id``, ``task_id``) does not see it); its use is recorded (it
    is handed to the caller)."""
    found, _ = await _memory(state, memory, deadline, memory_id, owner, scope, history=False)
    return json_response(memory_json(found))


@router.post("/v1/memories:used")
async def mark_used(
    body: UsedRequest,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    user_id: Annotated[str, Depends(body_owner(UsedRequest))],
    memory: HeldMemory,
) -> Response:
    """Record that an agent was handed ``user_id``'s memories ``ids`` (one use each): how
    many were marked (ids that user has no memory of are not)."""
    limited = principal.agents is not None or principal.tasks is not None

    def mark() -> int:
        ids = body.ids
        if limited:  # a key limited to tasks marks only what it may see (no probing others')
            seen = [(i, memory.get(i, user_id=user_id, used=False)) for i in ids]
            ids = [i for i, found in seen if key_sees(principal, found)]
        return memory.mark_used(ids, user_id=user_id) if ids else 0

    marked = await state.blocking(mark, "recording use", deadline, writes=True)
    return json_response({"marked": marked})


@router.get("/v1/memories/{memory_id}/history")
async def history(
    memory_id: str,
    state: State,
    deadline: RequestDeadline,
    owner: QueryOwner,
    scope: QueryScope,
    memory: HeldMemory,
) -> Response:
    """Every change of one memory, oldest first (404 as ``GET /v1/memories/{id}``)."""
    found, entries = await _memory(state, memory, deadline, memory_id, owner, scope, history=True)
    return json_response(
        {
            "id": found.id,
            "status": found.status,
            "memory": found.item.memory,
            "superseded_by": found.superseded_by,
            "history": [entry_json(entry) for entry in entries],
        }
    )


@router.post("/v1/memories:forget")
async def forget(
    body: ForgetRequest,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    user_id: Annotated[str, Depends(body_owner(ForgetRequest))],
    memory: HeldMemory,
) -> Response:
    """Forget what one source said: memories it alone supported expire (with ``erase``: are
    erased), the others lose its sources. Returns the events and the erase ``receipt``."""
    check_whole_owner(principal, "forgetting a source")
    source = SourceSelector(
        doc_path=body.doc_path,
        session_id=body.session_id,
        message_id=body.message_id,
        input_key=body.input_key,
    )

    async def answer() -> Response:
        # A forget that committed is answered with its events, however late.
        def work() -> EraseReceipt:
            receipt = memory.forget(source, user_id=user_id, erase=body.erase)
            # Kept answers naming a forgotten memory are withdrawn: by its id (every answer
            # holding a memory names it), and by its text while it is still readable.
            state.erased(forgotten_texts(memory, list(receipt), user_id))
            return receipt

        receipt = await state.blocking(work, "forgetting", deadline, writes=True)
        events = [event_json(event) for event in receipt]
        return json_response({"events": events, "receipt": receipt.to_dict()})

    return await state.idempotent(request, principal, "forget", answer)


@router.post("/v1/memories")
async def add_memory(
    body: AddMemoryRequest,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: Annotated[str, Depends(body_owner(AddMemoryRequest))],
    scope: Annotated[Scope, Depends(body_scope(AddMemoryRequest))],
    memory: HeldMemory,
) -> Response:
    """Store one memory given as text (embedded, deduplicated, categorised, with history):
    201 with its event when added, 200 when it was stored already (``REINFORCE``, ``NONE``)."""
    agent_id, task_id = scope

    def work() -> WriteEvent:
        return memory.add_memory(
            body.text,
            user_id=owner,
            session_id=body.session_id,
            memory_type=body.memory_type,
            importance=body.importance,
            valid_from=body.valid_from,
            metadata=body.metadata,
            tags=body.tags,
            agent_id=agent_id,
            task_id=task_id,
            visibility=body.visibility,
        )

    return await _write(state, request, principal, deadline, "add", work)


@router.patch("/v1/memories/{memory_id}")
async def update_memory(
    memory_id: str,
    body: UpdateMemoryRequest,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: Annotated[str, Depends(body_owner(UpdateMemoryRequest))],
    memory: HeldMemory,
) -> Response:
    """Replace a memory's text with a new version (the old one ``superseded``, never edited):
    its event names the new id (``memory_id``) and the old one (``previous_id``)."""

    def work() -> WriteEvent:
        _changeable(memory, principal, memory_id, owner)
        return memory.update(memory_id, body.text, user_id=owner, reason=body.reason)

    return await _write(state, request, principal, deadline, "update", work)


@router.delete("/v1/memories/{memory_id}")
async def delete_memory(
    memory_id: str,
    request: Request,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    owner: QueryOwner,
    memory: HeldMemory,
    erase: Annotated[bool, Query()] = False,
) -> Response:
    """Expire a memory now (its row and history stay), or with ``?erase=true`` remove it from
    every place its text lives, for good (irreversible): the answer then holds the erase
    ``receipt`` beside the ``event``."""

    def work() -> WriteEvent | EraseReceipt:
        _changeable(memory, principal, memory_id, owner)
        texts = erased_texts(memory, memory_id, owner) if erase else []
        event = memory.delete(memory_id, user_id=owner, erase=erase)
        state.erased(texts)  # kept answers holding its text are withdrawn
        return event

    return await _write(state, request, principal, deadline, "delete", work)


async def _write(
    state: ServiceState,
    request: Request,
    principal: Principal,
    deadline: Deadline,
    route: str,
    work: Callable[[], WriteEvent | EraseReceipt],
) -> Response:
    """Run one direct write on the store threads (idempotent with an ``Idempotency-Key``);
    answer its event, 201 for an ``ADD``, and an erasure's ``receipt``."""

    async def answer() -> Response:
        done = await state.blocking(work, route, deadline, writes=True)
        if isinstance(done, EraseReceipt):
            body = {"event": event_json(done[0]), "receipt": done.to_dict()}
            return json_response(body)
        return json_response({"event": event_json(done)}, 201 if done.event == "ADD" else 200)

    return await state.idempotent(request, principal, route, answer)


def _changeable(memory: Memory, principal: Principal, memory_id: str, owner: str) -> None:
    """Refuse a change of ``memory_id`` outside a limited key's agents and tasks (a memory
    the owner does not have is the store's 404)."""
    stored = memory.get(memory_id, user_id=owner, used=False)
    if stored is not None:
        check_change(principal, stored)


async def _memory(
    state: ServiceState,
    memory: Memory,
    deadline: Deadline,
    memory_id: str,
    owner: str,
    scope: Scope,
    *,
    history: bool,
) -> tuple[StoredMemory, list[HistoryEntry]]:
    """The memory ``memory_id`` of ``owner`` (404 when it has none such, or ``scope`` does
    not see it), and its history when asked; shown (not a history, an audit), it is used."""
    agent_id, task_id = scope
    seen = {"agent_id": agent_id, "task_id": task_id}
    found = await state.blocking(
        lambda: memory.get(memory_id, user_id=owner, used=not history, **seen),
        "the lookup",
        deadline,
    )
    if found is None:
        raise _not_found(owner, memory_id)
    entries = []
    if history:
        entries = await state.blocking(
            lambda: memory.history(memory_id, user_id=owner), "the history", deadline
        )
    return found, entries


def _not_found(user_id: str, memory_id: str) -> ProblemError:
    return ProblemError(
        404,
        "not-found",
        "No such memory",
        f"user {shown(user_id)} has no memory {shown(memory_id)}",
    )
