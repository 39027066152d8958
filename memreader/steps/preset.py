"""The readers' default steps: reading, fast mode's items, fine mode with the passes its config
names (in their order, from :mod:`memreader.extraction.passes`), fast mode's importance, the
store lookup that spares stored items their embedding (a no-op without a store), the
embedding, and the categories (unless ``categories.enabled`` is false).

>>> [s.name for s in default_steps(FineConfig(passes=["extract", "preference"]))][6:]
['extract', 'preference', 'fine_items', 'pass_items', 'importance', 'dedup', 'embed', 'categorize']
"""

from __future__ import annotations

from memreader.config import FineConfig
from memreader.errors import ConfigError
from memreader.extraction.passes import FinePass, passes_in_order
from memreader.pipeline import Step
from memreader.steps.agent import PassItems
from memreader.steps.categorize import Categorize
from memreader.steps.dedup import Dedup
from memreader.steps.embed import Embed
from memreader.steps.fast import FastItems
from memreader.steps.fine import FineItems, PrepareFine
from memreader.steps.importance import ScoreImportance
from memreader.steps.read import Normalize, Parse, WindowStep
from memreader.steps.refine import RefineInput
from memreader.steps.registry import STEPS

__all__ = ["default_steps", "pass_step"]


def pass_step(entry: FinePass) -> Step:
    """The step of the pass ``entry``: the step class registered under its name, built."""
    factory = STEPS.get(entry.name)
    if not (isinstance(factory, type) and issubclass(factory, Step)):
        raise ConfigError(f"fine pass {entry.name!r}: its step must be a Step subclass")
    built = factory()
    if built.name != entry.name:
        raise ConfigError(f"fine pass {entry.name!r}: its step is named {built.name!r}")
    return built


def default_steps(fine: FineConfig | None = None, *, categorize: bool = True) -> list[Step]:
    """The steps of the simple reader for these fine-mode settings: the passes of
    ``fine.enabled_passes()``, a pass whose step requires the call's ``items`` after fine
    mode's items are built, the others before (with ``pass_items`` after the fine items when
    a pass leaves items there), then fast mode's importance, ``dedup`` (items already in the
    reader's store are not embedded; nothing without a store), the embedding and, with
    ``categorize`` (the reader's ``categories.enabled``), ``categorize``."""
    fine = fine if fine is not None else FineConfig()
    on_windows: list[Step] = []
    on_items: list[Step] = []
    for entry in passes_in_order(fine.enabled_passes()):
        step = pass_step(entry)
        (on_items if "items" in step.requires else on_windows).append(step)
    steps: list[Step] = [
        Normalize(),
        Parse(),
        WindowStep(),
        FastItems(),
        PrepareFine(),
        RefineInput(),
        *on_windows,
        FineItems(keep_empty=fine.empty_window == "fallback"),
    ]
    if any("pass_items" in s.produces for s in on_windows):
        steps.append(PassItems())
    tail: list[Step] = [ScoreImportance(), Dedup(), Embed()]
    return [*steps, *on_items, *tail, *([Categorize()] if categorize else [])]
