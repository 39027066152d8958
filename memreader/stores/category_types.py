"""What a store keeps of categories (memU's third layer, above resources and items): a name, a
description, its embedding, a summary that cites the items it rests on, and links to the
owner's active memories. Per owner, walled like memories.

The store keeps them; :mod:`memreader.categories` decides what they hold (which items a
category covers, what its summary says). A store with a :class:`CategoryKeeper` calls it after
every change, in the same ``write``/``forget`` call, so summaries never lag the memories.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.items import TextualMemoryItem
    from memreader.stores.events import WriteEvent

__all__ = [
    "CATEGORY_NAME",
    "RESERVED_NAMES",
    "CategoryDef",
    "CategoryKeeper",
    "StoredCategory",
    "SummaryKind",
    "check_category",
]

#: How a summary was made: by the LLM, by the deterministic list (fast mode, or the LLM's answer
#: refused), or not yet (a category with no items).
SummaryKind = Literal["llm", "deterministic", "empty"]


@dataclass(frozen=True)
class StoredCategory:
    """A category of one owner as stored: its definition, its summary (sentences ending in
    ``[ref:ITEM_ID]`` citations), how the summary was made (``summary_kind``, and
    ``summary_note``: why an LLM answer was refused, if it was), the ids of the active memories
    it covers (sorted), and when the summary last changed."""

    user_id: str
    name: str
    description: str
    summary: str = ""
    summary_kind: SummaryKind = "empty"
    summary_note: str | None = None
    item_ids: tuple[str, ...] = ()
    updated_at: datetime | None = None
    embedding: Sequence[float] | None = field(default=None, repr=False, compare=False)


class CategoryKeeper(Protocol):
    """What a store calls after each change (``write``, ``write_part``, ``retire_unseen``,
    ``forget``), with the events and the items written (empty for ``forget`` and
    ``retire_unseen``): it links the items to their categories and updates the summaries of
    the categories whose items changed (:class:`memreader.categories.CategoryMaintainer`)."""

    def after_change(
        self,
        store: Any,
        events: Sequence[WriteEvent],
        items: Sequence[TextualMemoryItem],
    ) -> object:
        """Bring the owners' categories up to date with ``events`` (what it returns, such as
        the summaries it updated, the store ignores)."""
        ...


#: A category name: lower-case letters, digits and ``_``, starting with a letter (a safe file
#: name and URL segment everywhere). Display text belongs in the description.
CATEGORY_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: Names a category may not take: ``index`` is the Markdown export's index file.
RESERVED_NAMES = frozenset({"index"})


class CategoryDef(ConfigModel):
    """A category as configured: ``name`` (see :data:`CATEGORY_NAME`) and ``description`` (what
    belongs in it, one or two sentences: fast mode embeds it to match items).

    >>> CategoryDef(name="preferences", description="Likes, dislikes and tastes.").name
    'preferences'
    """

    name: str
    description: str = Field(min_length=1, max_length=1000)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if value in RESERVED_NAMES:
            raise ValueError(f"{value!r} is reserved (the Markdown export's index.md)")
        if not CATEGORY_NAME.fullmatch(value):
            raise ValueError(
                "a category name is 1-64 lower-case letters, digits or '_', starting with a "
                f"letter (got {value!r})"
            )
        return value


def check_category(name: Any, what: str = "category") -> str:
    """``name``, a valid category name (:data:`~memreader.stores.category_types.CATEGORY_NAME`).

    Raises:
        InputError: it is not one (``what`` names the argument).
    """
    if not isinstance(name, str) or not CATEGORY_NAME.fullmatch(name):
        raise InputError(
            f"{what} must be a category name (lower-case letters, digits, '_'), got {name!r}"
        )
    return name
