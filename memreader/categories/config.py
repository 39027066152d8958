"""The settings of categories (the reader config's ``categories`` section): the ten
default categories for a personal assistant and the catch-all, and how summaries are
made."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from memreader.config_model import ConfigModel
from memreader.stores.category_types import CategoryDef

__all__ = [
    "CATCH_ALL",
    "DEFAULT_CATEGORIES",
    "CategoriesConfig",
    "SummarySettings",
]


#: The catch-all's name and description.
CATCH_ALL = CategoryDef(
    name="other",
    description="Everything that fits no other category: passing remarks, one-off facts, "
    "small talk worth keeping.",
)

DEFAULT_CATEGORIES: tuple[CategoryDef, ...] = (
    CategoryDef(
        name="personal_info",
        description="The user's name and identity: my name is, I am, age, birthday, nationality, "
        "hometown, where they live, languages they speak.",
    ),
    CategoryDef(
        name="preferences",
        description="What the user likes and dislikes: favourite food, drinks, music, films, "
        "books, styles, brands; tastes, opinions and choices.",
    ),
    CategoryDef(
        name="relationships",
        description="Family and friends: mother, father, sister, brother, wife, husband, "
        "boyfriend, girlfriend, children, best friend, pets; the people the user loves.",
    ),
    CategoryDef(
        name="goals",
        description="Ambitions and life goals: what the user dreams of, hopes for and is working "
        "towards; plans to change their life, career or future.",
    ),
    CategoryDef(
        name="work",
        description="Work and career: the user's job, boss, company, colleagues, tasks, overtime, "
        "work pressure, projects, job hunting, interviews, changing jobs, salary.",
    ),
    CategoryDef(
        name="education",
        description="School, university, courses, exams, studying, teachers, degrees and "
        "what the user is learning.",
    ),
    CategoryDef(
        name="health",
        description="Health and body: illness, symptoms, allergies, diet, medication, "
        "doctors, sleep, exercise, mood and stress.",
    ),
    CategoryDef(
        name="activities",
        description="Hobbies and pastimes: sports, games, music, reading, cooking, art, "
        "crafts, outings and what the user does for fun.",
    ),
    CategoryDef(
        name="travel_places",
        description="Trips, travel, holidays, moving home, cities, countries and places the "
        "user visits, plans to visit or knows.",
    ),
    CategoryDef(
        name="events_schedule",
        description="Appointments and dated events: a meeting, a party, a birthday, a wedding, a "
        "deadline or a date in the calendar.",
    ),
)


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
      (:data:`~memreader.categories.config.DEFAULT_CATEGORIES`); false: only ``define``.
    - ``define``: categories added to the defaults; one with a default's name replaces it.
    - ``catch_all``: where an item that fits none goes (``other`` by default).
    - ``threshold`` (0.175): the cosine between an item and a category's description from which
      fast mode links them. Measured for the bundled local embedder (int8) on 120 hand-labelled
      MemoryBank messages (``benchmarks/categories.py``, RESULTS.md): the best micro F1 (0.58);
      another embedder has other cosines, so measure it again.
    - ``max_per_item`` (3): the most categories one item is linked to.
    - ``prompt_descriptions`` (false): fine mode's extraction prompt lists each category with
      its description, not its name alone. The ten defaults' names say what they hold; the
      descriptions cost about 1,250 more characters per LLM call (1.0 prompt character per input
      character on MemoryBank English). Turn it on for categories whose names do not explain them.
    - ``summaries``: :class:`SummarySettings`.
    """

    enabled: bool = True
    defaults: bool = True
    define: list[CategoryDef] = Field(default_factory=list, max_length=200)
    catch_all: CategoryDef = CATCH_ALL
    threshold: float = Field(default=0.175, ge=-1.0, le=1.0)
    max_per_item: int = Field(default=3, ge=1, le=20)
    prompt_descriptions: bool = False
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
