"""The engine that runs a reader: pipelines of named steps over a typed state (see
:mod:`.pipeline`, :mod:`.step`, :mod:`.state`, :mod:`.chain`). The built-in steps are in
:mod:`memreader.steps`; this package never imports them."""

from memreader.pipeline.hooks import StepEvent, StepHook, StepHooks
from memreader.pipeline.pipeline import Pipeline
from memreader.pipeline.runtime import ReaderRuntime, SharedKey
from memreader.pipeline.spec import apply_spec, build_step
from memreader.pipeline.state import FineWindow, ReadState, WindowedScene
from memreader.pipeline.step import FunctionStep, Step, step

__all__ = [
    "FineWindow",
    "FunctionStep",
    "Pipeline",
    "ReadState",
    "ReaderRuntime",
    "SharedKey",
    "Step",
    "StepEvent",
    "StepHook",
    "StepHooks",
    "WindowedScene",
    "apply_spec",
    "build_step",
    "step",
]
