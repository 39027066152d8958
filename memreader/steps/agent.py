"""The extra fine passes as pipeline steps: tool trajectories, preferences and skills (LLM
passes chained per window after the rewrite), and the step that adds their items to the call's
result.

==============  =====================================  ========================  ============
step            requires                               produces                  modes
==============  =====================================  ========================  ============
tool            fine_windows                           tool_outcomes, pass_items fine, refine
preference      fine_windows                           pass_items                fine, refine
skill           fine_windows, tool_outcomes            pass_items                fine, refine
pass_items      fine_windows, items, emitted,          items, emitted            fine, refine
                pass_items
==============  =====================================  ========================  ============

The tool pass runs only on windows with real tool traffic (a ``tool`` message, an assistant's
``tool_calls``, ``tool_input``/``tool_output`` parts), never because a text says "tool"; the
skill pass only where the tool pass found a successful attempt. A pass that fails on a window
loses only its own items there: the window report's ``passes`` says which failed, and
``report.passes`` counts calls, tokens, items and failures per pass.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memreader.extraction import short_error
from memreader.extraction.agent_passes import (
    PassOutcome,
    Preference,
    SkillDraft,
    Trajectory,
    preference_plan,
    skill_plan,
    tool_plan,
)
from memreader.extraction.importance import heuristic_importance
from memreader.extraction.skill_text import skill_text
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem
from memreader.modes import LLM_MODES
from memreader.pipeline import Step
from memreader.steps.chain import PerWindowStep, WindowWork, count_pass
from memreader.steps.items import make_item
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime, SharedKey
from memreader.steps.state import FineWindow, ReadState

if TYPE_CHECKING:
    from memreader.extraction.skills import SkillWriter

__all__ = [
    "ExtraPass",
    "PassItems",
    "PreferencePass",
    "SkillPass",
    "ToolPass",
    "has_tool_traffic",
]

logger = logging.getLogger(__name__)

#: Source types that are tool traffic (a ``tool`` role message is too).
TOOL_TRAFFIC = frozenset({"tool_calls", "tool_input", "tool_output"})


def has_tool_traffic(sources: Sequence[SourceMessage]) -> bool:
    """Whether a window holds real tool traffic: a ``tool`` (or ``function``) message, an
    assistant's tool calls, or tool input/output parts."""
    return any(s.role in ("tool", "function") or s.type in TOOL_TRAFFIC for s in sources)


def _cited(
    fw: FineWindow, ids: Sequence[int], fallback: Sequence[SourceMessage]
) -> tuple[list[SourceMessage], bool]:
    """The sources of the cited lines, or ``fallback`` (and ``True``) when none is cited."""
    own = [fw.sources[i - 1] for i in ids if 0 < i <= len(fw.sources)]
    return (own, False) if own else (list(fallback), True)


class ExtraPass(PerWindowStep):
    """An extra LLM pass over each window (see the module docstring): its items and errors
    go to ``pass_items``, its status to each window report's ``passes``."""

    requires: tuple[str, ...] = ("fine_windows",)
    produces: tuple[str, ...] = ("pass_items",)
    modes = LLM_MODES

    def applies(self, state: ReadState, index: int) -> bool:
        """Whether the pass has anything to look at in window ``index``."""
        return True

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        """The pass's plan for one window."""
        raise NotImplementedError

    def items(
        self, runtime: ReaderRuntime, fw: FineWindow, outcome: PassOutcome[Any]
    ) -> list[TextualMemoryItem]:
        """The items of one window's outcome."""
        raise NotImplementedError

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        fw = state.fine_windows[index]
        if not self.applies(state, index):
            fw.report.passes[self.name] = "skipped"
            self.record(state, index, PassOutcome(status="skipped"))
            return
        outcome: PassOutcome[Any] = yield from self.plan(state, fw, index)
        self.record(state, index, outcome)
        items = self.items(runtime, fw, outcome) if outcome.status == "ok" else []
        error = f"{self.name}: {outcome.error}" if outcome.error else None
        state.pass_items.add(index, items, error)
        fw.report.passes[self.name] = outcome.status
        count_pass(
            state, self.name, windows=1, items=len(items), failed=int(outcome.status == "failed")
        )

    def record(self, state: ReadState, index: int, outcome: PassOutcome[Any]) -> None:
        """Keep a window's outcome for later passes (the tool pass does)."""

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        fw = state.fine_windows[index]
        fw.report.passes[self.name] = "failed"
        state.pass_items.add(index, (), f"{self.name}: {short_error(error)}")
        self.record(state, index, PassOutcome(status="failed", error=short_error(error)))
        count_pass(state, self.name, windows=1, failed=1)


@STEPS.register("tool")
class ToolPass(ExtraPass):
    """Tool trajectories: what was tried, with which arguments, whether it worked, the lesson;
    each citing the messages of the call and its result (``ToolTrajectoryMemory``)."""

    name = "tool"
    produces = ("tool_outcomes", "pass_items")

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        state.tool_outcomes = [PassOutcome(status="skipped") for _ in state.fine_windows]

    def applies(self, state: ReadState, index: int) -> bool:
        return has_tool_traffic(state.fine_windows[index].sources)

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        return tool_plan(fw.input)

    def record(self, state: ReadState, index: int, outcome: PassOutcome[Any]) -> None:
        state.tool_outcomes[index] = outcome

    def items(
        self, runtime: ReaderRuntime, fw: FineWindow, outcome: PassOutcome[Trajectory]
    ) -> list[TextualMemoryItem]:
        tool_sources = [
            s for s in fw.sources if s.role in ("tool", "function") or s.type in TOOL_TRAFFIC
        ]
        made = []
        for k, trajectory in enumerate(outcome.entries):
            sources, whole = _cited(fw, trajectory.source_ids, tool_sources)
            tags = ["mode:fine", "tool", f"tool:{trajectory.tool}", f"outcome:{trajectory.outcome}"]
            tags += ["sources:window"] if whole else []
            tags += [f"repaired:{r}" for r in trajectory.repairs]
            made.append(
                make_item(
                    memory=trajectory.text(),
                    info=fw.info,
                    sources=sources,
                    memory_type=MemoryType.TOOL_TRAJECTORY,
                    tags=list(dict.fromkeys([*tags, *fw.custom_tags])),
                    id_parts=(*fw.id_base, "tool", k),
                    key=f"{trajectory.tool}: {trajectory.task}"[:120],
                    importance=heuristic_importance(trajectory.text()),
                )
            )
        return made


@STEPS.register("preference")
class PreferencePass(ExtraPass):
    """The user's explicit and implicit preferences, each citing its messages
    (``PreferenceMemory``), through the ``preference_extractor_llm`` slot."""

    name = "preference"

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        return preference_plan(fw.input)

    def items(
        self, runtime: ReaderRuntime, fw: FineWindow, outcome: PassOutcome[Preference]
    ) -> list[TextualMemoryItem]:
        made = []
        for k, preference in enumerate(outcome.entries):
            sources, whole = _cited(fw, preference.source_ids, fw.sources)
            tags = ["mode:fine", "preference", f"preference:{preference.kind}"]
            tags += [preference.topic] if preference.topic else []
            tags += ["sources:window"] if whole else []
            tags += [f"repaired:{r}" for r in preference.repairs]
            made.append(
                make_item(
                    memory=preference.preference,
                    info=fw.info,
                    sources=sources,
                    memory_type=MemoryType.PREFERENCE,
                    tags=list(dict.fromkeys([*tags, *fw.custom_tags])),
                    id_parts=(*fw.id_base, "preference", k),
                    key=preference.topic or None,
                    importance=heuristic_importance(preference.preference),
                )
            )
        return made


@STEPS.register("skill")
class SkillPass(ExtraPass):
    """Skills distilled from successful tool trajectories (``SkillMemory``), each also written
    as a ``SKILL.md`` bundle where ``skills.output`` says (a folder or an S3 prefix)."""

    name = "skill"
    requires = ("fine_windows", "tool_outcomes")

    def applies(self, state: ReadState, index: int) -> bool:
        return bool(self._successes(state, index))

    @staticmethod
    def _successes(state: ReadState, index: int) -> list[Trajectory]:
        outcome: PassOutcome[Trajectory] = state.tool_outcomes[index]
        return [t for t in outcome.entries if t.outcome == "success"]

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        return skill_plan(fw.input, self._successes(state, index))

    def items(
        self, runtime: ReaderRuntime, fw: FineWindow, outcome: PassOutcome[SkillDraft]
    ) -> list[TextualMemoryItem]:
        from memreader.extraction.skills import Skill, SkillWriteError

        writer = skill_writer(runtime)
        made = []
        for k, draft in enumerate(outcome.entries):
            sources, whole = _cited(fw, draft.source_ids, fw.sources)
            skill = Skill(
                name=draft.name,
                description=draft.description,
                steps=draft.steps,
                inputs=draft.inputs,
                tools=draft.tools,
                source=_where(sources),
                owner=str(fw.info["user_id"]),
            )
            tags = ["mode:fine", "skill", *(f"tool:{t}" for t in draft.tools)]
            tags += ["sources:window"] if whole else []
            item = make_item(
                memory=_skill_text(draft),
                info=fw.info,
                sources=sources,
                memory_type=MemoryType.SKILL,
                tags=list(dict.fromkeys([*tags, *fw.custom_tags])),
                id_parts=(*fw.id_base, "skill", k),
                key=draft.name,
                background=draft.description,
                importance=heuristic_importance(_skill_text(draft)),
            )
            try:
                location = writer.write(skill) if writer is not None else None
            except SkillWriteError as exc:
                item.metadata.tags.append("skill:not_written")
                fw.report.notes.append(f"skill bundle not written: {short_error(exc)}")
                logger.warning("skill bundle not written: %s", short_error(exc))
            else:
                if location is not None:
                    item.metadata.file_ids.append(location)
            made.append(item)
        return made


def _build_skill_writer(runtime: ReaderRuntime) -> SkillWriter:
    from memreader.extraction.skills import SkillWriter

    return SkillWriter(runtime.config.fine.skills)


#: The reader's skill bundle writer, shared by its calls.
SKILL_WRITER = SharedKey("skill_writer", _build_skill_writer)


def skill_writer(runtime: ReaderRuntime) -> SkillWriter | None:
    """The reader's shared skill bundle writer, or ``None`` when no output is configured."""
    if runtime.config.fine.skills.output is None:
        return None
    return runtime.shared(SKILL_WRITER)


def _skill_text(draft: SkillDraft) -> str:
    return skill_text(draft.name, draft.description, draft.steps, draft.inputs)


def _where(sources: Sequence[SourceMessage]) -> str:
    if not sources:
        return ""
    messages = sorted({s.message_index for s in sources})
    span = str(messages[0]) if len(messages) == 1 else f"{messages[0]}-{messages[-1]}"
    return f"scene {sources[0].scene_index}, messages {span}"


@STEPS.register("pass_items")
class PassItems(Step):
    """The extra passes' items, added after each window's fine items, in window order."""

    name = "pass_items"
    requires = ("fine_windows", "items", "emitted", "pass_items")
    produces = ("items", "emitted")
    modes = LLM_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        made = state.pass_items
        for index, fw in enumerate(state.fine_windows):
            fw.report.pass_errors.extend(made.errors.get(index, ()))
            for item in made.items.get(index, ()):
                item.metadata.refined_from = fw.refined_from
                state.items[fw.position].append(item)
                state.emitted.append((item, fw.report))
