"""The ``categorize`` step: each item of the call linked to the categories it belongs to
(``metadata.categories``, names from the reader's ``categories`` config; memU's third layer).

==========  ========  ========  ==================
step        requires  produces  modes
==========  ========  ========  ==================
categorize  items     items     fast, fine, refine
==========  ========  ========  ==================

The rules, in order, for each item of the call:

1. A ``RawFileMemory`` item (a document chunk kept verbatim beside fine mode's items) is a
   resource, not a memory: it gets no category (the memories made from it do).
2. An item that already names categories keeps those the config defines, first ones first, at
   most ``max_per_item``. Fine mode's items (``fine_items``, refinement too) name those of the
   extraction answer: the prompt names the categories and each memory may carry
   ``"categories"`` (see :mod:`memreader.extraction.contract`; unknown names are dropped there,
   tagged ``repaired:categories``). No extra LLM call.
3. Any other item with a vector (fast mode's, a fine memory whose answer named no category, a
   fallback, the agent passes' items) is matched by similarity: the cosine between its vector
   and each category's description vector (the descriptions embedded once per reader with its
   embedder, kept on the runtime); every category at or above ``threshold``, best first, at
   most ``max_per_item``; none, the catch-all (``other``). The catch-all is never matched by
   similarity.
4. An item without a vector (its embedding failed, ``embedder: null``, or ``dedup`` spared it
   its embedding because it is already stored) is left with no category: the memory store's
   category keeper assigns those (from the vector it keeps).

With ``categories.enabled: false`` the readers' pipelines leave the step out and the prompt
lists no categories; run anyway, the step does nothing. Embedding the descriptions fails: one
warning, and the items are left to the store as in rule 4.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memreader.categories.assign import CategoryIndex
from memreader.categories.config import CategoriesConfig
from memreader.errors import MemReaderError
from memreader.extraction.contract import CategoryMenu
from memreader.extraction.fine import short_error
from memreader.items import MemoryType, TextualMemoryItem
from memreader.modes import ALL_MODES
from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime, SharedKey
from memreader.steps.state import ReadState

__all__ = ["CATEGORY_INDEX", "Categorize", "category_menu"]

logger = logging.getLogger(__name__)


def category_menu(config: CategoriesConfig) -> CategoryMenu | None:
    """The categories an extraction prompt offers under ``config``: every category but the
    catch-all (the prompt names them; with ``prompt_descriptions`` it also describes them);
    ``None`` when categories are off or only the catch-all is left.

    >>> category_menu(CategoriesConfig()).names[:2]
    ('personal_info', 'preferences')
    >>> category_menu(CategoriesConfig(enabled=False)) is None
    True
    """
    if not config.enabled:
        return None
    offered = tuple(
        (c.name, c.description) for c in config.all() if c.name != config.catch_all.name
    )
    if not offered:
        return None
    return CategoryMenu(offered, config.max_per_item, described=config.prompt_descriptions)


def build_index(runtime: ReaderRuntime) -> CategoryIndex:
    """The reader's :class:`CategoryIndex`: its categories' descriptions embedded with its
    embedder (raises what the embedder raises)."""
    return CategoryIndex.build(runtime.config.categories, runtime.embedder)


#: The description vectors, embedded on first use and kept for the reader's life.
CATEGORY_INDEX: SharedKey[CategoryIndex] = SharedKey("category_index", build_index)


@STEPS.register("categorize")
class Categorize(Step):
    """Links each item of the call to its categories (see the module docstring)."""

    name = "categorize"
    requires = ("items",)
    produces = ("items",)
    modes = frozenset(ALL_MODES)

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        config = runtime.config.categories
        if not config.enabled:
            return
        known = {c.name for c in config.all()}
        unmatched: list[TextualMemoryItem] = []
        for items in state.items:
            for item in items:
                metadata = item.metadata
                if metadata.memory_type is MemoryType.RAW_FILE:
                    continue
                named = [n for n in dict.fromkeys(metadata.categories) if n in known]
                metadata.categories = named[: config.max_per_item]
                if not named and metadata.embedding is not None:
                    unmatched.append(item)
        if unmatched:
            _match(unmatched, runtime, config)


def _match(
    items: Sequence[TextualMemoryItem], runtime: ReaderRuntime, config: CategoriesConfig
) -> None:
    """Link ``items`` (each with a vector) by similarity; an item whose vector does not fit
    the descriptions' (another embedder's) is left to the store."""
    try:
        index = runtime.shared(CATEGORY_INDEX)
    except MemReaderError as exc:  # the categories are advice: the items stand without them
        logger.warning(
            "categorize: embedding the category descriptions failed, leaving %d items to the "
            "store: %s",
            len(items),
            short_error(exc),
        )
        return
    for item in items:
        picked = index.pick(item.metadata.embedding, config)
        if picked is not None:  # None: another embedder's vector, left to the store
            item.metadata.categories = picked
