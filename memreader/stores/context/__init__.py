"""``context()``: the best memory text of a query within a token budget, as one block for a
system prompt and as data (:mod:`~memreader.stores.context.packing` packs,
:mod:`~memreader.stores.context.scores` weighs each passage,
:mod:`~memreader.stores.context.repeats` finds what was said again,
:mod:`~memreader.stores.context.groups` writes the lines under their headers,
:mod:`~memreader.stores.context.text` escapes them, :mod:`~memreader.stores.context.block`
counts the block, :mod:`~memreader.stores.context.parts` is what it returns)."""

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
    check_budget,
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
    "check_budget",
    "check_context_args",
    "context_json",
    "pack_context",
    "search_context",
]
