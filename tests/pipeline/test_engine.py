"""The engine alone: a pipeline over a state and runtime of its own (no built-in step, no
ReadState), the inputs it is built with, and the ``runs_with`` seam that hands a run of
consecutive steps of one kind to their group."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import memreader
import memreader.pipeline
from memreader import PipelineError
from memreader.modes import Mode
from memreader.pipeline import FunctionStep, Pipeline, Step, StepEvent, StepHooks
from memreader.steps.chain import PER_WINDOW, PerWindowStep
from memreader.steps.state import INPUTS, ReadState


class TinyState:
    """The least a state needs to be carried: no report, no built-in field."""

    def __init__(self, mode: Mode = "fast") -> None:
        self.mode: Mode = mode
        self.values: dict[str, Any] = {}
        self.timings: dict[str, list[float]] = {}
        self.deadline_checks: list[str] = []

    def check_deadline(self, where: str) -> None:
        self.deadline_checks.append(where)

    def cancel(self) -> None:
        pass

    def counts(self) -> Mapping[str, int]:
        return {"values": len(self.values)}

    def get(self, name: str) -> Any:
        return self.values[name]

    def set(self, name: str, value: Any) -> None:
        self.values[name] = value

    def record_step(self, name: str, seconds: float) -> None:
        self.timings.setdefault(name, []).append(seconds)


class TinyRuntime:
    def __init__(self) -> None:
        self.step_hooks = StepHooks()


def put(name: str, value: object, *, requires: Sequence[str] = ()) -> FunctionStep:
    def body(state: TinyState, runtime: TinyRuntime) -> None:
        state.set(name, value)

    return FunctionStep(name, body, requires=requires, produces=[name])


class Recorder:
    """A group runner that runs its steps in reverse and says so, with made-up seconds."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, ...]] = []

    def run(self, steps: Sequence[Step], state: Any, runtime: Any) -> Mapping[str, float]:
        self.runs.append(tuple(s.name for s in steps))
        for s in reversed(steps):
            s.run(state, runtime)
        return {s.name: float(i + 1) for i, s in enumerate(steps)}

    async def arun(self, steps: Sequence[Step], state: Any, runtime: Any) -> Mapping[str, float]:
        return self.run(steps, state, runtime)


RECORDER = Recorder()


class Grouped(Step):
    """A step whose kind runs as one group through :data:`RECORDER`."""

    runs_with = RECORDER

    def __init__(self, name: str) -> None:
        self.name = name
        self.produces = (name,)

    def run(self, state: TinyState, runtime: TinyRuntime) -> None:
        state.set(self.name, [*state.values.get("order", [])])
        state.set("order", [*state.values.get("order", []), self.name])


def test_a_pipeline_runs_over_any_state_and_runtime_that_fit() -> None:
    seen: list[tuple[str, Mapping[str, int]]] = []
    runtime = TinyRuntime()
    runtime.step_hooks.after_step.append(lambda e: seen.append((e.step, e.counts)))
    pipeline = Pipeline([put("a", 1), put("b", 2, requires=["a"])])
    state = TinyState()
    pipeline.run(state, runtime)
    assert state.values == {"a": 1, "b": 2}
    # Each step's time goes where the state keeps it; the run loop knows no report.
    assert sorted(state.timings) == ["a", "b"]
    assert seen == [("a", {"values": 1}), ("b", {"values": 2})]
    assert state.deadline_checks == ["before step 'a'", "before step 'b'"]


def test_the_async_run_carries_the_same_state() -> None:
    state = TinyState()
    asyncio.run(Pipeline([put("a", 1), put("b", 2)]).arun(state, TinyRuntime()))
    assert state.values == {"a": 1, "b": 2}
    assert sorted(state.timings) == ["a", "b"]


def test_inputs_are_what_the_pipeline_is_built_with() -> None:
    needs_scene = put("x", 1, requires=["scene_data"])
    with pytest.raises(PipelineError, match="requires 'scene_data'"):
        Pipeline([needs_scene])
    pipeline = Pipeline([needs_scene], inputs=["scene_data"])
    assert pipeline.inputs == {"scene_data"}
    assert pipeline.copy().inputs == {"scene_data"}
    # A change is checked against the same inputs.
    pipeline.append(put("y", 2, requires=["scene_data", "x"]))
    assert pipeline.names == ("x", "y")


def test_a_readers_pipeline_starts_from_the_read_states_inputs() -> None:
    reader = memreader.SimpleStructMemReader(memreader.SimpleStructMemReaderConfig(embedder=None))
    assert reader.pipeline.inputs == INPUTS
    assert reader.pipeline.copy().inputs == INPUTS


def test_consecutive_steps_of_one_kind_go_to_their_group_together() -> None:
    RECORDER.runs.clear()
    events: list[tuple[str, float]] = []
    runtime = TinyRuntime()
    runtime.step_hooks.after_step.append(lambda e: events.append((e.step, e.elapsed_s)))
    pipeline = Pipeline([Grouped("g1"), Grouped("g2"), put("plain", 0), Grouped("g3")])
    state = TinyState()
    pipeline.run(state, runtime)
    # A step of another kind ends the group: g1 + g2 together, then plain alone, then g3.
    assert RECORDER.runs == [("g1", "g2"), ("g3",)]
    assert state.values["order"] == ["g2", "g1", "g3"]
    # The group's seconds per step are what the state records and the events carry.
    assert state.timings["g1"] == [1.0]
    assert state.timings["g2"] == [2.0]
    assert state.timings["g3"] == [1.0]
    assert [name for name, _ in events] == ["g1", "g2", "plain", "g3"]
    assert state.deadline_checks[0] == "before step 'g1' + 'g2'"


def test_the_async_run_hands_groups_over_too() -> None:
    RECORDER.runs.clear()
    asyncio.run(Pipeline([Grouped("g1"), Grouped("g2")]).arun(TinyState(), TinyRuntime()))
    assert RECORDER.runs == [("g1", "g2")]


def test_a_failing_group_names_its_steps() -> None:
    class Broken(Grouped):
        def run(self, state: TinyState, runtime: TinyRuntime) -> None:
            raise RuntimeError("no")

    errors: list[StepEvent] = []
    runtime = TinyRuntime()
    runtime.step_hooks.on_step_error.append(errors.append)
    with pytest.raises(memreader.InternalError, match="steps 'g1' \\+ 'b2' failed"):
        Pipeline([Grouped("g1"), Broken("b2")]).run(TinyState(), runtime)
    assert [e.step for e in errors] == ["g1", "b2"]


def test_per_window_steps_run_with_the_per_window_chains() -> None:
    assert PerWindowStep.runs_with is PER_WINDOW
    assert Step.runs_with is None


def test_the_engine_exports_only_engine_names() -> None:
    assert not {"ReadState", "ReaderRuntime", "WindowedScene", "FineWindow", "apply_spec"} & set(
        memreader.pipeline.__all__
    )
    # The face keeps every public name.
    assert memreader.ReadState is ReadState
    assert {"Pipeline", "ReadState", "Step", "StepEvent", "StepHooks", "step"} <= set(
        memreader.__all__
    )


def test_a_pipeline_built_without_inputs_says_how_to_give_them() -> None:
    from memreader.steps.registry import STEPS

    with pytest.raises(
        PipelineError, match=r"built without inputs: Pipeline\(steps, inputs=\.\.\.\)"
    ):
        Pipeline([STEPS.get("normalize")()])
