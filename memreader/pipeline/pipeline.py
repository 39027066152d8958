"""An ordered list of named steps, checked whenever it is built or changed.

Each step declares the state fields it ``requires`` and ``produces``. For every mode (``fast``,
``fine``, ``refine``) the pipeline walks its steps in order and checks that what each active step
requires is an input of the call (the ``inputs`` it is built with) or produced by an earlier
active step. A step that names its
``modes`` must be satisfiable in each of them; a step without ``modes`` runs in every mode where
it is, and must be satisfiable in at least one. Names are unique. Every change is checked at
once and leaves the pipeline unchanged when it fails, so nothing is checked for the first time
while data flows.

The run loop knows no built-in step: it runs each active step in turn over the state and runtime
it is handed (:class:`~memreader.pipeline.protocols.StepState`,
:class:`~memreader.pipeline.protocols.StepRuntime`), except that consecutive steps that share a
``runs_with`` group are handed to that group together (see :class:`~memreader.pipeline.Step`).

>>> from memreader.pipeline import FunctionStep
>>> noop = lambda state, runtime: None
>>> p = Pipeline([FunctionStep("a", noop, produces=["x"]), FunctionStep("b", noop, requires=["x"])])
>>> p.remove("a")  # doctest: +ELLIPSIS
Traceback (most recent call last):
memreader.errors.PipelineError: cannot remove step 'a': step 'b' requires 'x', which no ...
>>> p.insert_after("a", FunctionStep("c", noop, requires=["x"], produces=["y"]))
>>> p.names
('a', 'c', 'b')
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from memreader.calls.observers import settle_observers
from memreader.errors import InternalError, MemReaderError, PipelineError
from memreader.modes import ALL_MODES
from memreader.pipeline.hooks import StepEvent
from memreader.pipeline.protocols import StepRuntime, StepState
from memreader.pipeline.step import Step, as_step, describe

__all__ = ["Pipeline"]

logger = logging.getLogger(__name__)


def _plans(steps: Sequence[Step], inputs: frozenset[str]) -> dict[str, tuple[Step, ...]]:
    """The active steps of each mode; raises :class:`PipelineError` if the list is not sound."""
    try:
        return _checked_plans(steps, inputs)
    except PipelineError as error:
        if inputs:
            raise
        # A reader plugin's default_pipeline that forgot its inputs meets this first.
        raise PipelineError(
            f"{error} (this pipeline was built without inputs: Pipeline(steps, inputs=...) names "
            "what every call starts with; a reader's are memreader.steps.state.INPUTS)"
        ) from None


def _checked_plans(steps: Sequence[Step], inputs: frozenset[str]) -> dict[str, tuple[Step, ...]]:
    seen: set[str] = set()
    for s in steps:
        if s.name in seen:
            raise PipelineError(f"two steps are named {s.name!r}")
        seen.add(s.name)
    plans: dict[str, tuple[Step, ...]] = {}
    unplaced: dict[str, str] = {}  # steps without modes that no mode could run yet: why
    for mode in ALL_MODES:
        available = set(inputs)
        active: list[Step] = []
        for s in steps:
            missing = [name for name in s.requires if name not in available]
            if s.modes is None:
                if missing:
                    unplaced.setdefault(s.name, _missing(s, missing[0], None))
                    continue
            elif mode not in s.modes:
                continue
            elif missing:
                raise PipelineError(_missing(s, missing[0], mode))
            active.append(s)
            available.update(s.produces)
        plans[mode] = tuple(active)
    for s in steps:
        unknown = set(s.modes or ()) - set(ALL_MODES)
        if unknown:
            raise PipelineError(
                f"step {s.name!r} names unknown modes {sorted(unknown)}; modes are {ALL_MODES}"
            )
        if s.modes is None and not any(s in plan for plan in plans.values()):
            raise PipelineError(unplaced[s.name])
    return plans


def _missing(s: Step, name: str, mode: str | None) -> str:
    where = f" (in {mode} mode)" if mode is not None else ""
    return f"step {s.name!r} requires {name!r}, which no earlier step produces{where}"


class Pipeline:
    """Named steps in order; see the module docstring. ``print(pipeline)`` lists them.

    Args:
        steps: the steps, in order.
        inputs: the names every call's state starts with (the readers pass
            :data:`memreader.steps.state.INPUTS`); a step may require them without an
            earlier step producing them.
    """

    def __init__(self, steps: Iterable[Step] = (), *, inputs: Iterable[str] = ()) -> None:
        checked = [as_step(s) for s in steps]
        self._inputs = frozenset(inputs)
        self._plans = _plans(checked, self._inputs)
        self._steps = tuple(checked)
        self._listeners: list[Callable[[Pipeline], object]] = []

    # -- reading ----------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps in order."""
        return self._steps

    @property
    def inputs(self) -> frozenset[str]:
        """The names every call's state starts with."""
        return self._inputs

    @property
    def names(self) -> tuple[str, ...]:
        """The step names in order."""
        return tuple(s.name for s in self._steps)

    def active(self, mode: str) -> tuple[Step, ...]:
        """The steps that run in ``mode``, in order."""
        try:
            return self._plans[mode]
        except KeyError:
            raise PipelineError(f"unknown mode {mode!r}; modes are {ALL_MODES}") from None

    def __getitem__(self, name: str) -> Step:
        return self._steps[self._index(name)]

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[Step]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    def __str__(self) -> str:
        lines = []
        for i, s in enumerate(self._steps):
            modes = [mode for mode in ALL_MODES if s in self._plans[mode]]
            lines.append(f"{i + 1:>2}. {describe(s, modes)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Pipeline({list(self.names)!r})"

    def copy(self) -> Pipeline:
        """An independent pipeline with the same steps and inputs (no listeners)."""
        return Pipeline(self._steps, inputs=self._inputs)

    # -- changing ---------------------------------------------------------------------------

    def insert_before(self, name: str, *steps: Step) -> None:
        """Insert ``steps`` before the step ``name``."""
        i = self._index(name)
        self._change(self._steps[:i] + self._new(steps) + self._steps[i:], None)

    def insert_after(self, name: str, *steps: Step) -> None:
        """Insert ``steps`` after the step ``name``."""
        i = self._index(name) + 1
        self._change(self._steps[:i] + self._new(steps) + self._steps[i:], None)

    def append(self, *steps: Step) -> None:
        """Add ``steps`` at the end."""
        self._change(self._steps + self._new(steps), None)

    def replace(self, name: str, step: Step) -> None:
        """Put ``step`` where the step ``name`` is (the new step may have another name)."""
        i = self._index(name)
        (new,) = self._new([step])
        self._change((*self._steps[:i], new, *self._steps[i + 1 :]), f"replace step {name!r}")

    def remove(self, name: str) -> None:
        """Remove the step ``name``."""
        i = self._index(name)
        self._change(self._steps[:i] + self._steps[i + 1 :], f"remove step {name!r}")

    def on_change(self, listener: Callable[[Pipeline], object]) -> None:
        """Call ``listener(pipeline)`` after every successful change."""
        self._listeners.append(listener)

    def _index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise PipelineError(
                f"no step named {name!r}; the steps are: {', '.join(self.names)}"
            ) from None

    @staticmethod
    def _new(steps: Iterable[Step]) -> tuple[Step, ...]:
        new = tuple(as_step(s) for s in steps)
        if not new:
            raise PipelineError("no step given")
        return new

    def _change(self, steps: tuple[Step, ...], action: str | None) -> None:
        try:
            plans = _plans(steps, self._inputs)
        except PipelineError as exc:
            if action is None:
                raise
            raise PipelineError(f"cannot {action}: {exc}") from None
        self._steps, self._plans = steps, plans
        for listener in list(self._listeners):
            listener(self)

    # -- running ----------------------------------------------------------------------------

    def run(self, state: StepState, runtime: StepRuntime) -> None:
        """Run the steps active in ``state.mode``, in order (consecutive steps that share a
        ``runs_with`` group as one run of it). The call's deadline is checked before each step
        (:class:`~memreader.errors.DeadlineExceeded` stops the whole call)."""
        for group in _groups(self.active(state.mode)):
            state.check_deadline(_before_group(group))
            started = self._before(group, state, runtime)
            try:
                runner = group[0].runs_with
                if runner is None:
                    group[0].run(state, runtime)
                    spans = None
                else:
                    spans = runner.run(group, state, runtime)
            except BaseException as exc:
                error = self._failed(group, state, runtime, started, exc)
                if error is exc:
                    raise
                raise error from exc
            self._after(group, state, runtime, started, spans)

    async def arun(self, state: StepState, runtime: StepRuntime) -> None:
        """The async twin of :meth:`run`. Async interceptors have ended before each step starts
        and before this returns or raises (cancelled included: ``on_step_error`` sees it)."""
        for group in _groups(self.active(state.mode)):
            state.check_deadline(_before_group(group))
            started = self._before(group, state, runtime)
            await settle_observers()
            try:
                runner = group[0].runs_with
                if runner is None:
                    await group[0].arun(state, runtime)
                    spans = None
                else:
                    spans = await runner.arun(group, state, runtime)
            except BaseException as exc:
                error = self._failed(group, state, runtime, started, exc)
                await settle_observers()
                if error is exc:
                    raise
                raise error from exc
            self._after(group, state, runtime, started, spans)
        await settle_observers()

    @staticmethod
    def _before(group: Sequence[Step], state: StepState, runtime: StepRuntime) -> float:
        for s in group:
            event = StepEvent(s.name, state.mode, 0.0, state.counts())
            runtime.step_hooks.emit("before_step", event)
        return time.perf_counter()

    @staticmethod
    def _after(
        group: Sequence[Step],
        state: StepState,
        runtime: StepRuntime,
        started: float,
        spans: Mapping[str, float] | None,
    ) -> None:
        elapsed = time.perf_counter() - started
        for s in group:
            seconds = spans[s.name] if spans is not None else elapsed
            state.record_step(s.name, seconds)
            event = StepEvent(s.name, state.mode, seconds, state.counts())
            runtime.step_hooks.emit("after_step", event)

    @staticmethod
    def _failed(
        group: Sequence[Step],
        state: StepState,
        runtime: StepRuntime,
        started: float,
        exc: BaseException,
    ) -> BaseException:
        elapsed = time.perf_counter() - started
        names = " + ".join(repr(s.name) for s in group)
        for s in group:
            event = StepEvent(s.name, state.mode, elapsed, state.counts(), exc)
            runtime.step_hooks.emit("on_step_error", event)
        if isinstance(exc, MemReaderError) or not isinstance(exc, Exception):
            return exc  # typed errors, and KeyboardInterrupt or cancellation, pass as they are
        logger.error("step %s failed", names, exc_info=exc)
        kind = "step" if len(group) == 1 else "steps"
        return InternalError(f"{kind} {names} failed: {type(exc).__name__}: {exc}")


def _before_group(group: Sequence[Step]) -> str:
    """Where a deadline check before ``group`` stops the call, for its message."""
    return "before step " + " + ".join(repr(s.name) for s in group)


def _groups(steps: Sequence[Step]) -> list[list[Step]]:
    """Steps in order, consecutive steps that share a ``runs_with`` group together."""
    groups: list[list[Step]] = []
    for s in steps:
        runner = s.runs_with
        if runner is not None and groups and groups[-1][-1].runs_with is runner:
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups
