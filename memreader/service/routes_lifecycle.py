"""A store's life cycle over HTTP (:mod:`memreader.stores.lifecycle`): pins, which keep
memories out of their owner's budget (``POST /v1/memories:pin``, ``:unpin``), and the restore
of a memory the budget expired (``POST /v1/memories/{id}:restore``). Each runs on the store's
threads, as the other store routes do."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from memreader.service.models import PinRequest
from memreader.service.scope_walls import check_whole_owner
from memreader.service.state import ServiceState, json_response
from memreader.stores.shapes import event_json

__all__ = ["router"]

router = APIRouter(tags=["memories"])


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


@router.post("/v1/memories:pin")
async def pin(body: PinRequest, request: Request) -> Response:
    """Pin ``user_id``'s memories ``ids`` (404 when one is not that user's, and then none is
    pinned): how many were not pinned before, and the user's pinned ids."""
    return await _pins(body, request, on=True)


@router.post("/v1/memories:unpin")
async def unpin(body: PinRequest, request: Request) -> Response:
    """Unpin ``user_id``'s memories ``ids``: how many were pinned, and the pinned ids left."""
    return await _pins(body, request, on=False)


async def _pins(body: PinRequest, request: Request, *, on: bool) -> Response:
    state = _state(request)
    principal = state.principal(request)
    user_id = state.check_user(principal, body.user_id)
    # Pins answer with the owner's every pinned id and outlive tasks: the owner's operator's.
    check_whole_owner(principal, "pinning" if on else "unpinning")

    def work() -> dict[str, object]:
        call = state.store.pin if on else state.store.unpin
        changed = call(body.ids, user_id=user_id)
        return {"changed": changed, "pinned": state.store.pinned(user_id=user_id)}

    what = "pinning memories" if on else "unpinning memories"
    return json_response(await state.blocking(work, what, state.deadline(request), writes=True))


@router.post("/v1/memories/{memory_id}:restore")
async def restore(memory_id: str, request: Request, user_id: str = Query(min_length=1)) -> Response:
    """Bring back ``user_id``'s memory the budget expired: its ``ADD`` event (404 when that
    user has no such memory, 422 when the budget did not expire it)."""
    state = _state(request)
    principal = state.principal(request)
    owner = state.check_user(principal, user_id)
    check_whole_owner(principal, "restoring a memory")
    event = await state.blocking(
        lambda: state.store.restore(memory_id, user_id=owner),
        "restoring a memory",
        state.deadline(request),
        writes=True,
    )
    return json_response({"event": event_json(event)})
