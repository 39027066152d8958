"""``POST /v1/context``: the best memory text of one user that fits a token budget, as one
block for a system prompt, and its parts as data (:meth:`memreader.stores.MemoryStore.context`).

A key reads only its own users' memories, as search does; the store call runs on the store
threads within the request's deadline."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import Field
from starlette.responses import Response

from memreader.service.depends import BodyCall, HeldMemory, body_call
from memreader.service.models import FilterFields
from memreader.service.state import json_response
from memreader.stores.context import (
    DEFAULT_CONTEXT_K,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_TOKENIZER,
    MAX_CONTEXT_TOKENS,
    MIN_CONTEXT_TOKENS,
    ContextOrder,
    context_json,
)

__all__ = ["ContextRequest", "router"]

router = APIRouter(tags=["memories"])


class ContextRequest(FilterFields):
    """``POST /v1/context``: as ``MemoryStore.context`` (active memories only: an
    ``include_inactive`` of true is refused), with a search's filters."""

    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=10_000)
    max_tokens: int = Field(
        default=DEFAULT_CONTEXT_TOKENS, ge=MIN_CONTEXT_TOKENS, le=MAX_CONTEXT_TOKENS
    )
    tokenizer: str = Field(default=DEFAULT_TOKENIZER, min_length=1, max_length=100)
    k: int = Field(default=DEFAULT_CONTEXT_K, ge=1, le=200)
    order: ContextOrder = "time"
    #: A context shows active memories only: true is refused as a bad field.
    include_inactive: Literal[False] = False
    rerank: bool = Field(
        default=False,
        description="Pack the memories in the order the reader's LLM ranks them (Memory."
        "context's rerank); 'reranked' and 'rerank_fallback' say how it went. Needs an LLM.",
    )


@router.post("/v1/context")
async def context(
    call: Annotated[BodyCall[ContextRequest], Depends(body_call(ContextRequest))],
    memory: HeldMemory,
) -> Response:
    """The best text of ``user_id``'s active memories for ``query`` within ``max_tokens``
    (counted with ``tokenizer``): ``text``, the block to put in a prompt, its ``tokens``, and
    its ``parts`` (memory ids, spans, scores, times, sources). The memories shown are
    recorded as used."""
    body, user_id = call.body, call.owner
    filters = body.search_filters(*call.scope)
    found = await call.state.blocking(
        lambda: memory.context(
            body.query,
            user_id=user_id,
            max_tokens=body.max_tokens,
            tokenizer=body.tokenizer,
            k=body.k,
            order=body.order,
            filters=filters,
            rerank=body.rerank,
        ),
        "the context",
        call.deadline,
    )
    return json_response(context_json(found))
