"""The extra fine passes as pipeline steps: tool trajectories, preferences and skills (LLM
passes chained per window after the rewrite), tool schemas (no LLM), and the step that adds
their items to the call's result.

==============  =====================================  ========================  ============
step            requires                               produces                  modes
==============  =====================================  ========================  ============
tool            fine_windows                           tool_outcomes, pass_items fine, refine
preference      fine_windows                           pass_items                fine, refine
skill           fine_windows, tool_outcomes            pass_items                fine, refine
pass_items      fine_windows, items, emitted,          items, emitted            fine, refine
                pass_items
tool_schema     windows, items, emitted                items, emitted            fine
==============  =====================================  ========================  ============

The tool pass runs only on windows with real tool traffic (a ``tool`` message, an assistant's
``tool_calls``, ``tool_input``/``tool_output`` parts), never because a text says "tool"; the
skill pass only where the tool pass found a successful attempt. A pass that fails on a window
loses only its own items there: the window report's ``passes`` says which failed, and
``report.passes`` counts calls, tokens, items and failures per pass.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memreader.emit import make_item
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
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem
from memreader.parsers import PartRef
from memreader.pipeline.chain import PerWindowStep, WindowWork, count_pass
from memreader.pipeline.runtime import ReaderRuntime
from memreader.pipeline.state import FineWindow, ReadState
from memreader.pipeline.step import STEPS, Step
from memreader.rendering import render_json

__all__ = [
    "PASS_STEPS",
    "PassItems",
    "PassResults",
    "PreferencePass",
    "SkillPass",
    "ToolPass",
    "ToolSchemas",
    "has_tool_traffic",
]

logger = logging.getLogger(__name__)

LLM_MODES = frozenset({"fine", "refine"})
#: Source types that are tool traffic (a ``tool`` role message is too).
TOOL_TRAFFIC = frozenset({"tool_calls", "tool_input", "tool_output"})


def has_tool_traffic(sources: Sequence[SourceMessage]) -> bool:
    """Whether a window holds real tool traffic: a ``tool`` (or ``function``) message, an
    assistant's tool calls, or tool input/output parts."""
    return any(s.role in ("tool", "function") or s.type in TOOL_TRAFFIC for s in sources)


@dataclass
class PassResults:
    """What the extra passes made, by window index: items, and errors for the window's report
    (added after the fine items, whose building resets the report's ``pass_errors``)."""

    items: dict[int, list[TextualMemoryItem]] = field(default_factory=dict)
    errors: dict[int, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, index: int, items: Sequence[TextualMemoryItem], error: str | None) -> None:
        with self.lock:
            if items:
                self.items.setdefault(index, []).extend(items)
            if error:
                self.errors.setdefault(index, []).append(error)


def _cited(
    fw: FineWindow, ids: Sequence[int], fallback: Sequence[SourceMessage]
) -> tuple[list[SourceMessage], bool]:
    """The sources of the cited lines, or ``fallback`` (and ``True``) when none is cited."""
    own = [fw.sources[i - 1] for i in ids if 0 < i <= len(fw.sources)]
    return (own, False) if own else (list(fallback), True)


class _ExtraPass(PerWindowStep):
    """An extra LLM pass over each window (see the module docstring)."""

    requires: tuple[str, ...] = ("fine_windows",)
    produces: tuple[str, ...] = ("pass_items",)
    modes = LLM_MODES

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if "pass_items" not in state.values:
            state.set("pass_items", PassResults())

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
        state.get("pass_items").add(index, items, error)
        fw.report.passes[self.name] = outcome.status
        count_pass(
            state, self.name, windows=1, items=len(items), failed=int(outcome.status == "failed")
        )

    def record(self, state: ReadState, index: int, outcome: PassOutcome[Any]) -> None:
        """Keep a window's outcome for later passes (the tool pass does)."""

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        fw = state.fine_windows[index]
        fw.report.passes[self.name] = "failed"
        state.get("pass_items").add(index, (), f"{self.name}: {short_error(error)}")
        self.record(state, index, PassOutcome(status="failed", error=short_error(error)))
        count_pass(state, self.name, windows=1, failed=1)


@STEPS.register("tool")
class ToolPass(_ExtraPass):
    """Tool trajectories: what was tried, with which arguments, whether it worked, the lesson;
    each citing the messages of the call and its result (``ToolTrajectoryMemory``)."""

    name = "tool"
    produces = ("tool_outcomes", "pass_items")

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        super().begin(state, runtime)
        state.set("tool_outcomes", [PassOutcome(status="skipped") for _ in state.fine_windows])

    def applies(self, state: ReadState, index: int) -> bool:
        return has_tool_traffic(state.fine_windows[index].sources)

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        return tool_plan(fw.input)

    def record(self, state: ReadState, index: int, outcome: PassOutcome[Any]) -> None:
        state.get("tool_outcomes")[index] = outcome

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
                )
            )
        return made


@STEPS.register("preference")
class PreferencePass(_ExtraPass):
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
                )
            )
        return made


@STEPS.register("skill")
class SkillPass(_ExtraPass):
    """Skills distilled from successful tool trajectories (``SkillMemory``), each also written
    as a ``SKILL.md`` bundle where ``skills.output`` says (a folder or an S3 prefix)."""

    name = "skill"
    requires = ("fine_windows", "tool_outcomes")

    def applies(self, state: ReadState, index: int) -> bool:
        return bool(self._successes(state, index))

    @staticmethod
    def _successes(state: ReadState, index: int) -> list[Trajectory]:
        outcome: PassOutcome[Trajectory] = state.get("tool_outcomes")[index]
        return [t for t in outcome.entries if t.outcome == "success"]

    def plan(self, state: ReadState, fw: FineWindow, index: int) -> Any:
        return skill_plan(fw.input, self._successes(state, index))

    def items(
        self, runtime: ReaderRuntime, fw: FineWindow, outcome: PassOutcome[SkillDraft]
    ) -> list[TextualMemoryItem]:
        from memreader.skills import Skill, SkillWriteError

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


def skill_writer(runtime: ReaderRuntime) -> Any:
    """The reader's shared skill bundle writer, or ``None`` when no output is configured."""
    config = getattr(runtime.config.fine, "skills", None)
    if config is None or config.output is None:
        return None
    from memreader.skills import SkillWriter

    return runtime.shared("skill_writer", lambda: SkillWriter(config))


def _skill_text(draft: SkillDraft) -> str:
    steps = " ".join(f"{n}. {step}" for n, step in enumerate(draft.steps, 1))
    inputs = f" Inputs: {', '.join(draft.inputs)}." if draft.inputs else ""
    return f"Skill {draft.name}: {draft.description} Steps: {steps}{inputs}"


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
        made: PassResults = state.values.pop("pass_items", PassResults())
        for index, fw in enumerate(state.fine_windows):
            fw.report.pass_errors.extend(made.errors.get(index, ()))
            for item in made.items.get(index, ()):
                item.metadata.refined_from = fw.refined_from
                state.items[fw.position].append(item)
                state.emitted.append((item, fw.report))


@STEPS.register("tool_schema")
class ToolSchemas(Step):
    """One ``ToolSchemaMemory`` per distinct tool schema in the input (``tool_description``
    parts, and a message's ``tools`` definitions), deduplicated by the schema's content hash
    within a call; its id depends only on the owner and the schema, so it is the same in every
    call. No LLM."""

    name = "tool_schema"
    requires = ("windows", "items", "emitted")
    produces = ("items", "emitted")
    modes = frozenset({"fine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        seen: set[str] = set()
        made = 0
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                sources = None
                for segment_index, segment in enumerate(window.segments):
                    ref = ws.units[segment.unit].key
                    if not isinstance(ref, PartRef) or ref.part.type != "tool_description":
                        continue
                    payload = ref.part.payload if isinstance(ref.part.payload, dict) else {}
                    schema = _schema_of(payload)
                    digest = hashlib.sha256(schema.encode()).hexdigest()[:32]
                    if digest in seen:
                        continue
                    seen.add(digest)
                    sources = sources if sources is not None else ws.sources(window)
                    try:
                        item = _schema_item(state, payload, schema, digest, sources[segment_index])
                    except Exception as exc:  # one schema's failure is that schema's record
                        entry.pass_errors.append(f"tool_schema: {short_error(exc)}")
                        continue
                    state.items[position].append(item)
                    state.emitted.append((item, entry))
                    made += 1
        if made:
            count_pass(state, self.name, items=made)


def _schema_of(payload: dict[str, Any]) -> str:
    """The canonical JSON of a tool schema (what identifies it)."""
    body = {k: v for k, v in payload.items() if k != "type"}
    return render_json(body, limit=None, sort_keys=True).text  # json.dumps, depth-bounded


def _schema_item(
    state: ReadState, payload: dict[str, Any], schema: str, digest: str, source: SourceMessage
) -> TextualMemoryItem:
    name = str(payload.get("name") or "tool")
    description = payload.get("description")
    parameters = payload.get("parameters", payload.get("input_schema"))
    memory = f"Tool {name}"
    memory += f": {description}" if isinstance(description, str) and description else ""
    if parameters is not None:
        shown = render_json(parameters, sort_keys=True).text  # clipped, like the tool's line
        memory += f" Parameters: {shown}"
    return make_item(
        memory=memory,
        info=state.info,
        sources=[source],
        memory_type=MemoryType.TOOL_SCHEMA,
        tags=list(dict.fromkeys(["mode:fine", "tool_schema", f"tool:{name}", *state.custom_tags])),
        id_parts=("tool_schema", digest),
        key=name,
    )


#: The extra passes by name, in the order they run.
PASS_STEPS = {"tool": ToolPass, "preference": PreferencePass, "skill": SkillPass}


def iter_passes(names: Sequence[str]) -> Iterator[Step]:
    """The steps of the extra LLM passes ``names`` asks for, in their run order."""
    for name, cls in PASS_STEPS.items():
        if name in names:
            yield cls()
