"""A store's life cycle over HTTP (:mod:`memreader.stores.lifecycle`): pins, which keep
memories out of their owner's budget (``POST /v1/memories:pin``, ``:unpin``), and the restore
of a memory the budget expired (``POST /v1/memories/{id}:restore``). Each runs on the store's
threads, as the other store routes do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from memreader.front.memory import Memory
from memreader.service.depends import Caller, HeldMemory, RequestDeadline, State, body_owner
from memreader.service.models import PinRequest
from memreader.service.scope_walls import check_whole_owner
from memreader.service.state import json_response
from memreader.stores.shapes import event_json

__all__ = ["router"]

router = APIRouter(tags=["memories"])

#: The owner a pin request names, which the key may use.
PinOwner = Annotated[str, Depends(body_owner(PinRequest))]


@router.post("/v1/memories:pin")
async def pin(
    body: PinRequest,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    user_id: PinOwner,
    memory: HeldMemory,
) -> Response:
    """Pin ``user_id``'s memories ``ids`` (404 when one is not that user's, and then none is
    pinned): how many were not pinned before, and the user's pinned ids."""
    check_whole_owner(principal, "pinning")
    return json_response(
        await state.blocking(
            _pins(memory, body, user_id, on=True), "pinning memories", deadline, writes=True
        )
    )


@router.post("/v1/memories:unpin")
async def unpin(
    body: PinRequest,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    user_id: PinOwner,
    memory: HeldMemory,
) -> Response:
    """Unpin ``user_id``'s memories ``ids``: how many were pinned, and the pinned ids left."""
    check_whole_owner(principal, "unpinning")
    return json_response(
        await state.blocking(
            _pins(memory, body, user_id, on=False), "unpinning memories", deadline, writes=True
        )
    )


def _pins(
    memory: Memory, body: PinRequest, user_id: str, *, on: bool
) -> Callable[[], dict[str, object]]:
    """The work of a pin or an unpin: the count changed and the owner's pinned ids. (Pins
    answer with the owner's every pinned id and outlive tasks: a limited key may not.)"""

    def work() -> dict[str, object]:
        changed = (memory.pin if on else memory.unpin)(body.ids, user_id=user_id)
        # Read from the store itself: the change committed, its answer is due however late.
        return {"changed": changed, "pinned": memory.store.pinned(user_id=user_id)}

    return work


@router.post("/v1/memories/{memory_id}:restore")
async def restore(
    memory_id: str,
    state: State,
    principal: Caller,
    deadline: RequestDeadline,
    memory: HeldMemory,
    user_id: Annotated[str, Query(min_length=1)],
) -> Response:
    """Bring back ``user_id``'s memory the budget expired: its ``ADD`` event (404 when that
    user has no such memory, 422 when the budget did not expire it)."""
    owner = state.check_user(principal, user_id)
    check_whole_owner(principal, "restoring a memory")
    event = await state.blocking(
        lambda: memory.restore(memory_id, user_id=owner),
        "restoring a memory",
        deadline,
        writes=True,
    )
    return json_response({"event": event_json(event)})
