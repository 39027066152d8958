"""The registry of pipeline steps by name, for pipelines declared in YAML (:mod:`.spec`).

Each entry builds a step from its ``config`` (a Step class, or a function returning a step). The
built-in steps name their module in the lazy map below and register themselves when it is
imported; a fine pass's step is where its one registration in :mod:`memreader.extraction.passes`
says; a plugin's steps register when the ``memreader.plugins`` entry points load.
"""

from __future__ import annotations

from typing import Any

from memreader.extraction.passes import BUILTIN_PASSES
from memreader.registry import Registry

__all__ = ["STEPS"]

#: Steps by name (see the module docstring): ``@STEPS.register("name")``.
STEPS: Registry[Any] = Registry(
    "pipeline step",
    lazy={
        **dict.fromkeys(
            ["normalize", "parse", "window", "strategy_window"], "memreader.steps.read"
        ),
        "fast_items": "memreader.steps.fast",
        **dict.fromkeys(["prepare_fine", "fine_items"], "memreader.steps.fine"),
        "refine_input": "memreader.steps.refine",
        "pass_items": "memreader.steps.agent",
        **dict.fromkeys(["normalize_parts", "read_parts", "note_parts"], "memreader.steps.parts"),
        **dict.fromkeys(["describe_images", "image_items"], "memreader.steps.images"),
        "raw_file_items": "memreader.steps.raw_files",
        "importance": "memreader.steps.importance",
        "dedup": "memreader.steps.dedup",
        "embed": "memreader.steps.embed",
        "categorize": "memreader.steps.categorize",
        "redact": "memreader.steps.pii",
        "min_length": "memreader.steps.filters",
        # The fine passes' steps, where their one registration says.
        **{entry.name: entry.module for entry in BUILTIN_PASSES},
    },
)
