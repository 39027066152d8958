"""``context()``: the best memory text of a query within a token budget, as one block for a
system prompt and as data (:mod:`~memreader.stores.context.packing` packs,
:mod:`~memreader.stores.context.scores` weighs each passage, :mod:`~memreader.stores.context.block`
writes and counts the block)."""

from memreader.stores.context.packing import (
    CONTEXT_ORDERS,
    DEFAULT_CONTEXT_K,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_TOKENIZER,
    MAX_CONTEXT_TOKENS,
    MIN_CONTEXT_TOKENS,
    MIN_CUT_TOKENS,
    Context,
    ContextOrder,
    ContextPart,
    check_context_args,
    context_json,
    pack_context,
    search_context,
)

__all__ = [
    "CONTEXT_ORDERS",
    "DEFAULT_CONTEXT_K",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_TOKENIZER",
    "MAX_CONTEXT_TOKENS",
    "MIN_CONTEXT_TOKENS",
    "MIN_CUT_TOKENS",
    "Context",
    "ContextOrder",
    "ContextPart",
    "check_context_args",
    "context_json",
    "pack_context",
    "search_context",
]
