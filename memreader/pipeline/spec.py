"""Pipelines declared in a reader's YAML: step references resolved and changes applied.

A step reference is a registered step name (``redact``, ``min_length``, or any built-in) or a
``module:attr`` path to a :class:`~memreader.pipeline.Step` subclass or a function returning a
step; ``config`` holds its keyword arguments::

    pipeline:
      insert_after:
        parse: [{step: redact, config: {kinds: [email, phone]}}]
      remove: [rewrite]
"""

from __future__ import annotations

import importlib
from typing import Any

from memreader.config import PipelineSpec, StepSpec
from memreader.errors import ConfigError, PipelineError
from memreader.pipeline.pipeline import Pipeline
from memreader.pipeline.step import STEPS, Step

__all__ = ["apply_spec", "build_step"]


def build_step(spec: StepSpec) -> Step:
    """The step ``spec`` names, built with its ``config``.

    Raises:
        ConfigError: the name is not registered, the module or attribute does not exist, or
            the step cannot be built with that config.
    """
    reference = spec.step.strip()
    factory: Any
    if ":" in reference:
        module_name, _, attr = reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"step {reference!r}: cannot import module {module_name!r}: {exc}"
            ) from None
        factory = module
        for part in attr.split("."):
            factory = getattr(factory, part, None)
            if factory is None:
                raise ConfigError(f"step {reference!r}: module {module_name!r} has no {attr!r}")
    else:
        factory = STEPS.get(reference)
    if isinstance(factory, Step):
        if spec.config:
            raise ConfigError(f"step {reference!r} is a ready step; it takes no config")
        return factory
    if not callable(factory):
        raise ConfigError(f"step {reference!r} is neither a step nor a step factory")
    try:
        built = factory(**spec.config)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"step {reference!r}: cannot build it with {spec.config}: {exc}") from exc
    if not isinstance(built, Step):
        raise ConfigError(f"step {reference!r} built {type(built).__name__}, not a Step")
    return built


def apply_spec(pipeline: Pipeline, spec: PipelineSpec) -> None:
    """Apply the changes of ``spec`` to ``pipeline``: replace, remove, insert before, insert
    after. Raises :class:`PipelineError` (a ``ConfigError``) naming the change that fails."""
    try:
        for name, step_spec in spec.replace.items():
            pipeline.replace(name, build_step(step_spec))
        for name in spec.remove:
            pipeline.remove(name)
        for name, specs in spec.insert_before.items():
            pipeline.insert_before(name, *(build_step(s) for s in specs))
        for name, specs in spec.insert_after.items():
            pipeline.insert_after(name, *(build_step(s) for s in specs))
    except PipelineError as exc:
        raise PipelineError(f"config pipeline: {exc}") from None
