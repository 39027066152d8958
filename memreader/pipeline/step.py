"""A step of a read: a name, the state fields it requires and produces, and a body.

A step works on the whole call at once (all scenes, all windows), so a pipeline adds no
per-window cost. Write ``run`` for a sync body; ``arun`` runs it in a worker thread unless a step
overrides it with native async code (the LLM passes do). A cancelled ``arun`` cancels the call's
deadline and waits until that thread has ended (:func:`memreader.calls.deadlines.in_thread`): the
call's work never outlives it. A
step with a long loop calls ``state.check_deadline(where)`` between its units, so a deadline
stops it there.

>>> class TagTeam(Step):
...     name = "tag_team"
...     requires = ("items",)
...     produces = ("items",)
...     def run(self, state, runtime):
...         for items in state.items:
...             for item in items:
...                 item.metadata.tags.append("team:search")
>>> TagTeam()
Step('tag_team', requires=('items',), produces=('items',))

A function works too, through :func:`step`:

>>> @step("count_words", requires=("units",), produces=("word_count",))
... def count_words(state, runtime):
...     state.set("word_count", sum(len(u.text.split()) for us in state.units for u in us))
>>> count_words.produces
('word_count',)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol

from typing_extensions import TypeVar

from memreader.calls.deadlines import in_thread
from memreader.errors import PipelineError
from memreader.pipeline.protocols import StepRuntime, StepState

__all__ = [
    "FunctionStep",
    "RuntimeT",
    "StateT",
    "Step",
    "StepGroup",
    "as_step",
    "describe",
    "step",
]

#: The state a step reads and writes (the built-in steps':
#: :class:`~memreader.steps.state.ReadState`).
StateT = TypeVar("StateT", bound=StepState, default=Any)
#: The runtime a step is handed (the built-in steps':
#: :class:`~memreader.steps.runtime.ReaderRuntime`).
RuntimeT = TypeVar("RuntimeT", bound=StepRuntime, default=Any)


class StepGroup(Protocol):
    """How a run of consecutive steps of one kind runs together (per-window steps as one chain
    of LLM plans, say): the pipeline hands it the run, and it returns each step's seconds."""

    def run(self, steps: Sequence[Step], state: Any, runtime: Any) -> Mapping[str, float]:
        """Run ``steps`` together; each step's seconds by name."""

    async def arun(self, steps: Sequence[Step], state: Any, runtime: Any) -> Mapping[str, float]:
        """The async twin of :meth:`run`."""


class Step(Generic[StateT, RuntimeT]):
    """Base class of pipeline steps (see the module docstring), generic over the state and
    runtime it is handed (any, unless a subclass names them: ``Step[ReadState, ReaderRuntime]``).

    Attributes:
        name: unique within a pipeline; what ``insert_after`` and friends refer to.
        requires: state fields (or user values) that must exist before the step runs.
        produces: state fields (or user values) the step makes or changes.
        modes: the modes the step runs in (``fast``, ``fine``, ``refine``). ``None`` (the
            default for user steps): every mode in which what it requires is produced.
        runs_with: how consecutive steps of this kind run, as one group (``None``, the
            default: each step alone). The pipeline hands a run of consecutive steps that
            share it to it, without knowing what it does.
    """

    name: str = ""
    requires: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()
    modes: frozenset[str] | None = None
    runs_with: ClassVar[StepGroup | None] = None

    def run(self, state: StateT, runtime: RuntimeT) -> None:
        """The step's work on the whole call."""
        raise NotImplementedError(f"step {self.name!r} has no run()")

    async def arun(self, state: StateT, runtime: RuntimeT) -> None:
        """The async body: ``run`` in a worker thread unless overridden (cancelled, it waits
        for the thread to end)."""
        await in_thread(self.run, state, runtime, on_cancel=state.cancel)

    def __repr__(self) -> str:
        modes = f", modes={sorted(self.modes)}" if self.modes is not None else ""
        return (
            f"Step({self.name!r}, requires={tuple(self.requires)!r}, "
            f"produces={tuple(self.produces)!r}{modes})"
        )


#: A function step's body: ``fn(state, runtime)``.
StepBody = Callable[[Any, Any], None]


class FunctionStep(Step):
    """A step made of a plain function ``fn(state, runtime)``."""

    def __init__(
        self,
        name: str,
        fn: StepBody,
        *,
        requires: Iterable[str] = (),
        produces: Iterable[str] = (),
        modes: Iterable[str] | None = None,
    ) -> None:
        self.name = name
        self.fn = fn
        self.requires = tuple(requires)
        self.produces = tuple(produces)
        self.modes = frozenset(modes) if modes is not None else None
        self.__doc__ = fn.__doc__

    def run(self, state: Any, runtime: Any) -> None:
        """Call the function."""
        self.fn(state, runtime)


def step(
    name: str,
    *,
    requires: Iterable[str] = (),
    produces: Iterable[str] = (),
    modes: Iterable[str] | None = None,
) -> Callable[[StepBody], FunctionStep]:
    """Decorator: the function becomes a :class:`FunctionStep` named ``name``."""

    def decorate(fn: StepBody) -> FunctionStep:
        return FunctionStep(name, fn, requires=requires, produces=produces, modes=modes)

    return decorate


def _describe_fields(names: Iterable[str]) -> str:
    return ", ".join(names) or "-"


def describe(step_: Step, modes: Iterable[str]) -> str:
    """One line: ``name  requires -> produces  [the modes it runs in]``."""
    return (
        f"{step_.name:<14} {_describe_fields(step_.requires)} -> "
        f"{_describe_fields(step_.produces)}  [{', '.join(modes)}]"
    )


def as_step(obj: Any) -> Step:
    """``obj`` if it is a :class:`Step` instance; a clear error otherwise."""
    if isinstance(obj, Step) and isinstance(obj.name, str) and obj.name:
        return obj
    if isinstance(obj, type) and issubclass(obj, Step):
        raise PipelineError(f"{obj.__name__} is a step class; pass an instance: {obj.__name__}()")
    raise PipelineError(f"a pipeline step must be a named Step instance, got {obj!r}")
