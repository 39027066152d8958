"""``POST /v1/recall``: tiered recall over HTTP (:func:`memreader.front.recall.recall`):
categories, then items, then the resources they came from, with a sufficiency check by the
reader's LLM after each tier. A key reads only its own users' memories and its own scope (a
scope skips the category tier, whose summaries speak of every scope); the store calls and the
LLM's run on the store threads within the request's deadline."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import Field
from starlette.responses import Response

from memreader.front.recall import TIERS, TierName, recall_json
from memreader.service.depends import (
    HeldMemory,
    RequestDeadline,
    Scope,
    State,
    body_owner,
    body_scope,
)
from memreader.service.models import FilterFields
from memreader.service.state import json_response

__all__ = ["RecallRequest", "router"]

router = APIRouter(tags=["memories"])


class RecallRequest(FilterFields):
    """``POST /v1/recall``: as ``Memory.recall``, with a search's filters for the item tier."""

    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=10_000)
    k: int = Field(default=10, ge=1, le=200)
    tiers: list[TierName] = Field(
        default=list(TIERS), min_length=1, max_length=3, description="The tiers to run, in order."
    )
    sufficiency: bool = Field(
        default=True, description="Ask the LLM after each tier whether it suffices (stop then)."
    )
    rerank: bool = Field(default=False, description="Rerank the items by the LLM.")


@router.post("/v1/recall")
async def recall(
    body: RecallRequest,
    state: State,
    deadline: RequestDeadline,
    user_id: Annotated[str, Depends(body_owner(RecallRequest))],
    scope: Annotated[Scope, Depends(body_scope(RecallRequest))],
    memory: HeldMemory,
) -> Response:
    """``user_id``'s memory of ``query`` tier by tier: the chosen ``categories``, the
    ``items`` (as a search's hits), the ``resources`` they came from, and the ``tiers`` that
    ran (each with its verdict and note; the last is where it stopped)."""
    agent_id, task_id = scope
    filters = body.search_filters(agent_id, task_id)
    found = await state.blocking(
        lambda: memory.recall(
            body.query,
            user_id=user_id,
            k=body.k,
            tiers=body.tiers,
            sufficiency=body.sufficiency,
            rerank=body.rerank,
            filters=filters,
        ),
        "the recall",
        deadline,
    )
    return json_response(recall_json(found))
