"""The reader config's ``categories`` section: which categories there are, how items are
matched to them, and how summaries are made."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from memreader.categories.defaults import CATCH_ALL, DEFAULT_CATEGORIES
from memreader.config_model import ConfigModel
from memreader.stores.category_types import CategoryDef

__all__ = ["CategoriesConfig", "SummarySettings"]


class SummarySettings(ConfigModel):
    """How category summaries are made when the items of a category change.

    - ``mode``: ``auto`` (the default: an LLM summary when a changed item came from fine mode
      and the reader has an LLM, else the deterministic list), ``llm`` or ``deterministic``.
    - ``max_chars`` (4000): the longest summary; the deterministic list keeps the newest items
      that fit.
    - ``max_items`` (40): the most items an LLM call is shown (the newest), besides the old
      summary.
    """

    mode: Literal["auto", "llm", "deterministic"] = "auto"
    max_chars: int = Field(default=4000, ge=200, le=100_000)
    max_items: int = Field(default=40, ge=1, le=1000)


class CategoriesConfig(ConfigModel):
    """Categories (see :mod:`memreader.categories`).

    - ``enabled`` (true): the ``categorize`` step runs and stores keep categories.
    - ``defaults`` (true): start from the ten default categories
      (:data:`~memreader.categories.defaults.DEFAULT_CATEGORIES`); false: only ``define``.
    - ``define``: categories added to the defaults; one with a default's name replaces it.
    - ``catch_all``: where an item that fits none goes (``other`` by default).
    - ``threshold`` (0.175): the cosine between an item and a category's description from which
      fast mode links them. Measured for the bundled local embedder (int8) on 120 hand-labelled
      MemoryBank messages (``benchmarks/categories.py``, RESULTS.md): the best micro F1 (0.58);
      another embedder has other cosines, so measure it again.
    - ``max_per_item`` (3): the most categories one item is linked to.
    - ``summaries``: :class:`SummarySettings`.
    """

    enabled: bool = True
    defaults: bool = True
    define: list[CategoryDef] = Field(default_factory=list, max_length=200)
    catch_all: CategoryDef = CATCH_ALL
    threshold: float = Field(default=0.175, ge=-1.0, le=1.0)
    max_per_item: int = Field(default=3, ge=1, le=20)
    summaries: SummarySettings = Field(default_factory=SummarySettings)

    @model_validator(mode="after")
    def _unique_names(self) -> CategoriesConfig:
        names = [c.name for c in self.define]
        if len(names) != len(set(names)):
            raise ValueError("define: two categories share a name")
        if self.catch_all.name in names:
            raise ValueError(f"define: {self.catch_all.name!r} is the catch-all's name")
        return self

    def all(self) -> tuple[CategoryDef, ...]:
        """Every category, the catch-all last.

        >>> [c.name for c in CategoriesConfig(defaults=False).all()]
        ['other']
        """
        chosen = {c.name: c for c in DEFAULT_CATEGORIES} if self.defaults else {}
        for category in self.define:
            chosen[category.name] = category
        chosen.pop(self.catch_all.name, None)
        return (*chosen.values(), self.catch_all)
