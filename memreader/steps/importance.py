"""Fast mode's importance: each item scored by the stated heuristic, with its reason.

==========  ========  ========  =====
step        requires  produces  modes
==========  ========  ========  =====
importance  items     items     fast
==========  ========  ========  =====

Fine mode's items take their importance from the extraction answer (and the same heuristic
where the model gave none) as they are made, so this step runs in fast mode only. It asks no
LLM: remove it with ``pipeline.remove: [importance]`` and fast items carry no importance.
The heuristic and its reasons: :mod:`memreader.extraction.importance`.
"""

from __future__ import annotations

from memreader.extraction.importance import source_importance
from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

__all__ = ["ScoreImportance"]


@STEPS.register("importance")
class ScoreImportance(Step):
    """Scores every item that has no importance yet by what its sources say (the messages'
    text, not their rendered roles and times); an item an earlier step scored keeps its own."""

    name = "importance"
    requires = ("items",)
    produces = ("items",)
    modes = frozenset({"fast"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        for scene, items in enumerate(state.items):
            for position, item in enumerate(items):
                # Scoring reads every source's text: a 6 MB chat's items take seconds.
                state.check_deadline(f"before scoring item {position} of scene {scene}")
                metadata = item.metadata
                if metadata.importance is None:
                    scored = source_importance(metadata.sources)
                    metadata.importance, metadata.importance_reason = scored.score, scored.reason
