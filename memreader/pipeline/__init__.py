"""The engine that runs a reader: steps (:mod:`.step`), the checked ordered list and its run loop
(:mod:`.pipeline`), the step interceptors (:mod:`.hooks`), generic over the state and runtime it
carries (:mod:`.protocols`). It imports only leaves and never names a built-in step: those, with
their state, runtime, per-window chains and registry, are in :mod:`memreader.steps`."""

from memreader.pipeline.hooks import StepEvent, StepHook, StepHooks
from memreader.pipeline.pipeline import Pipeline
from memreader.pipeline.protocols import StepRuntime, StepState
from memreader.pipeline.step import FunctionStep, Step, StepGroup, step

__all__ = [
    "FunctionStep",
    "Pipeline",
    "Step",
    "StepEvent",
    "StepGroup",
    "StepHook",
    "StepHooks",
    "StepRuntime",
    "StepState",
    "step",
]
