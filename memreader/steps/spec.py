"""Pipelines declared in a reader's YAML: step references resolved and changes applied.

A step reference is a registered step name (``redact``, ``min_length``, any built-in, or one a
plugin installed through the ``memreader.plugins`` entry points registers) or, only with
``allow_imports: true``, a ``module:attr`` path to a :class:`~memreader.pipeline.Step` subclass,
a step, or a step factory registered in :data:`~memreader.steps.registry.STEPS`; ``config``
holds its keyword arguments::

    pipeline:
      insert_after:
        parse: [{step: redact, config: {kinds: [email, phone]}}]
        window: [{step: min_length, config: {min_chars: 20}}]

(A fine pass is switched in ``fine.passes``, not removed here: see
:class:`~memreader.config.FineConfig`.)

A config is not always written by whoever runs it (a job file from a colleague, a config in a
repository), and importing a module runs its code: so ``module:attr`` is refused unless the
config says ``allow_imports: true``, and even then what it names is checked to *be* a step, a
step class or a registered factory before anything is called (``os:system`` never runs).
"""

from __future__ import annotations

import importlib
from typing import Any

from memreader.config import PipelineSpec, StepSpec
from memreader.errors import ConfigError, PipelineError
from memreader.pipeline import Pipeline, Step
from memreader.steps.registry import STEPS

__all__ = ["apply_spec", "build_step"]


def build_step(spec: StepSpec, *, allow_imports: bool = False) -> Step:
    """The step ``spec`` names, built with its ``config``.

    Args:
        allow_imports: whether a ``module:attr`` reference may import its module (the
            config's ``pipeline.allow_imports``).

    Raises:
        ConfigError: the name is not registered; a ``module:attr`` reference without
            ``allow_imports``; the module or attribute does not exist, or is not a step, a
            step class or a registered step factory; or the step cannot be built with that
            config.
    """
    reference = spec.step.strip()
    factory: Any
    if ":" in reference:
        if not allow_imports:
            raise ConfigError(
                f"step {reference!r} names a Python module, and importing it runs its code: a "
                "config may name modules only with pipeline.allow_imports: true (or register "
                "the step by name, through a memreader.plugins entry point)"
            )
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
        if not _is_step_source(factory):
            raise ConfigError(
                f"step {reference!r} is {_kind(factory)}, not a Step subclass, a Step or a "
                "step factory registered in STEPS; it was not called"
            )
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
        imports = spec.allow_imports
        for name, step_spec in spec.replace.items():
            pipeline.replace(name, build_step(step_spec, allow_imports=imports))
        for name in spec.remove:
            pipeline.remove(name)
        for name, specs in spec.insert_before.items():
            pipeline.insert_before(name, *(build_step(s, allow_imports=imports) for s in specs))
        for name, specs in spec.insert_after.items():
            pipeline.insert_after(name, *(build_step(s, allow_imports=imports) for s in specs))
    except PipelineError as exc:
        raise PipelineError(f"config pipeline: {exc}") from None


def _is_step_source(obj: object) -> bool:
    """Whether a ``module:attr`` target may be used: a step, a step class, or a factory that
    code registered in ``STEPS`` (never an arbitrary callable such as ``os.system``)."""
    if isinstance(obj, Step):
        return True
    if isinstance(obj, type) and issubclass(obj, Step):
        return True
    return STEPS.holds(obj)


def _kind(obj: object) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__module__}.{obj.__qualname__}"
    if callable(obj):
        name = getattr(obj, "__qualname__", None) or type(obj).__name__
        return f"the callable {getattr(obj, '__module__', None) or '?'}.{name}"
    return f"a {type(obj).__name__}"
