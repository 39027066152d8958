"""The typed state the built-in steps read and write, one per call (the engine carries it as
any :class:`~memreader.pipeline.protocols.StepState`).

Each built-in field has a name that steps declare in ``requires`` and ``produces``; the pipeline
checks, when it is built or changed, that every field a step requires is produced by an earlier
step (or is an input of the call). A user's step may add values of its own: it declares their
names in ``produces`` and sets them with :meth:`ReadState.set`; a later step that declares the
name in ``requires`` reads it with :meth:`ReadState.get`. Names are checked the same way, so a
typo is a :class:`~memreader.errors.PipelineError` at build time, not a ``KeyError`` while data
flows.

What the built-in steps hand each other is a typed field here (``part_reads``,
``image_outcomes``, ``tool_outcomes``, ``pass_items`` among them); ``values`` holds only what
user steps add.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from memreader.calls.deadlines import Deadline
from memreader.documents.headings import HeadingIndex
from memreader.errors import InputError
from memreader.extraction import WindowInput, WindowOutcome
from memreader.extraction.agent_passes import PassOutcome
from memreader.extraction.image_pass import ImageOutcome
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.llms import UsageMeter
from memreader.modes import Mode
from memreader.scenes.scene import Scene
from memreader.steps.report import PartReport, ReadReport, WindowReport
from memreader.windowing.provenance import window_sources
from memreader.windowing.windows import Unit, Window

if TYPE_CHECKING:
    from memreader.parts.resolved import Resolved

__all__ = [
    "INPUTS",
    "STATE_FIELDS",
    "FineWindow",
    "ImageRefinement",
    "PartKey",
    "PartRead",
    "PassResults",
    "ReadState",
    "WindowedScene",
]

#: Where a part is in a call: scene position in the call, message index, part index.
PartKey = tuple[int, int, int | None]


@dataclass
class PartRead:
    """One part's record in a call (``read_parts``): its report entry and what it became."""

    report: PartReport
    resolved: Resolved | None = None
    label: str = ""


@dataclass
class ImageRefinement:
    """Refinement: one image source of a stored item (``position``, source ``source_index``),
    read again and described (``refine_images``), or why not (``report``).

    ``image_data_url`` holds the prepared image while it waits for the vision model;
    ``outcome`` is the description that was used and ``source`` the image's source with it
    joined to its line (both ``None`` when the image was not described).
    """

    position: int
    source_index: int
    report: PartReport
    image_data_url: str | None = None
    planned: bool = False
    outcome: ImageOutcome | None = None
    source: SourceMessage | None = None


@dataclass
class PassResults:
    """What the extra passes made, by window index: items, and errors for the window's report
    (added after the fine items, whose building resets the report's ``pass_errors``)."""

    items: dict[int, list[TextualMemoryItem]] = field(default_factory=dict)
    errors: dict[int, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, index: int, items: Sequence[TextualMemoryItem], error: str | None) -> None:
        """Add window ``index``'s items and error (thread-safe: windows run concurrently)."""
        with self.lock:
            if items:
                self.items.setdefault(index, []).extend(items)
            if error:
                self.errors.setdefault(index, []).append(error)


@dataclass(frozen=True)
class WindowedScene:
    """A scene, its units, the windows cut over them, and one report entry per window.

    ``digest`` identifies the scene by content, so item ids do not depend on how scenes were
    batched into calls: re-ingesting a scene gives the same ids wherever it stands. ``chunks``
    and ``headings`` place each document's segments (see
    :func:`memreader.windowing.provenance.chunk_positions`).
    """

    scene: Scene
    units: list[Unit]
    windows: list[Window]
    digest: str
    reports: list[WindowReport]
    chunks: Mapping[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    headings: Mapping[int, HeadingIndex] = field(default_factory=dict)

    def sources(self, window: Window) -> list[SourceMessage]:
        """The sources of ``window``'s segments, in order."""
        return window_sources(window, self.units, self.scene, self.chunks, self.headings)


@dataclass
class FineWindow:
    """What the LLM passes read of one window (or stored item), and where its items go.

    ``sources[i]`` is the source of the line numbered ``i + 1`` in the prompt.
    """

    position: int  # index of the inner result list
    memory_text: str
    id_base: tuple[object, ...]
    report: WindowReport
    custom_tags: list[str]
    info: Mapping[str, Any]
    # Filled by the step that prepares the window (prepare_fine does it per window, chained
    # with the LLM passes, so the first calls start before the last window is prepared).
    input: WindowInput = field(default_factory=lambda: WindowInput([], {}, "en"))
    sources: list[SourceMessage] = field(default_factory=list)
    #: Refinement: the id of the stored item this window is.
    refined_from: str | None = None
    #: Fine mode: the scene and window it was cut from (``prepare_fine`` reads its lines there).
    origin: tuple[WindowedScene, Window] | None = None
    #: The items ``fine_items`` built of it (the call's result takes them in window order).
    built: list[TextualMemoryItem] = field(default_factory=list)


@dataclass(eq=False)
class ReadState:
    """What one call has made so far (see the module docstring).

    Inputs of every call: ``scene_data``, ``type``, ``info``, ``mode``, ``custom_tags``,
    ``report``, ``deadline`` (checked with :meth:`check_deadline`) and, for refinement,
    ``stored_items``. The built-in steps fill, in order:
    ``scenes`` (normalise), ``units`` (parse: one list per scene), ``windows`` (window),
    ``fine_windows`` and ``outcomes`` (fine mode: one per window, then what the LLM passes made
    of it), ``items`` (one list per scene or stored item: the call's result) and ``emitted``
    (each item with its window's report, for the embed step), with ``embedding_fragments`` (by item
    id: the memory the item had and what to embed for it instead, as consecutive fragments; fast
    mode cuts a window where its overlaps begin and end; a step that changes the memory later
    makes the embed step embed the new memory instead). ``meter`` counts the call's LLM usage.

    The multimodal and agent steps add: ``part_reads`` (``read_parts``: each part read from
    outside the text, or unsupported, by where it is), ``image_outcomes`` (``describe_images``:
    each distinct image's description by sha256, with the first place it appears),
    ``image_refinements`` (``refine_images``: each stored item's image sources, read again and
    described, or why not),
    ``tool_outcomes`` (the tool pass's outcome per fine window, which the skill pass reads) and
    ``pass_items`` (what the extra passes made, which ``pass_items`` adds to the result).
    """

    mode: Mode
    type: str = "chat"
    info: dict[str, Any] = field(default_factory=dict)
    custom_tags: list[str] = field(default_factory=list)
    report: ReadReport = field(default_factory=ReadReport)
    scene_data: Any = None
    #: Refinement's input: each stored item, or why it could not be read as one (that item's
    #: error record; the others are refined).
    stored_items: list[TextualMemoryItem | InputError] = field(default_factory=list)
    scenes: list[Scene] = field(default_factory=list)
    units: list[list[Unit]] = field(default_factory=list)
    windows: list[WindowedScene] = field(default_factory=list)
    fine_windows: list[FineWindow] = field(default_factory=list)
    outcomes: list[WindowOutcome] = field(default_factory=list)
    items: list[list[TextualMemoryItem]] = field(default_factory=list)
    emitted: list[tuple[TextualMemoryItem, WindowReport]] = field(default_factory=list)
    embedding_fragments: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    meter: UsageMeter | None = None
    part_reads: dict[PartKey, PartRead] = field(default_factory=dict)
    image_outcomes: dict[str, tuple[ImageOutcome, PartKey]] = field(default_factory=dict)
    image_refinements: list[ImageRefinement] = field(default_factory=list)
    tool_outcomes: list[PassOutcome[Any]] = field(default_factory=list)
    pass_items: PassResults = field(default_factory=PassResults)
    #: When the call must stop (:mod:`memreader.calls.deadlines`); ``None``: never.
    deadline: Deadline | None = None
    #: What user steps add (:meth:`set`); the built-in steps use the typed fields above.
    values: dict[str, Any] = field(default_factory=dict)

    def check_deadline(self, where: str) -> None:
        """Return while the call may go on (a step's long loop calls it between its units).

        Raises:
            DeadlineExceeded: the call's deadline passed or was cancelled.
        """
        if self.deadline is not None:
            self.deadline.check(where)

    def cancel(self) -> None:
        """Stop the call's work at its next deadline check (its async caller was cancelled)."""
        if self.deadline is not None:
            self.deadline.cancel()

    def get(self, name: str) -> Any:
        """A built-in field or a value a user's step set."""
        if name in STATE_FIELDS:
            return getattr(self, name)
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"no value {name!r} in the read state (no step produced it)") from None

    def set(self, name: str, value: Any) -> None:
        """Set a built-in field or a value of a user's step."""
        if name in STATE_FIELDS:
            setattr(self, name, value)
        else:
            self.values[name] = value

    def record_step(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to step ``name``'s entry in ``report.steps``."""
        steps = self.report.steps
        steps[name] = steps.get(name, 0.0) + seconds

    def counts(self) -> Mapping[str, int]:
        """Sizes of what has been made (for interceptors and logs)."""
        return {
            "scenes": len(self.scenes) or len(self.stored_items),
            "windows": sum(len(ws.windows) for ws in self.windows) or len(self.fine_windows),
            "items": sum(len(items) for items in self.items),
        }


#: The built-in fields steps may name (``values`` holds the others).
STATE_FIELDS = frozenset(f.name for f in fields(ReadState)) - {"values"}
#: The fields every call starts with (the readers build their pipelines with them).
INPUTS = frozenset(
    {"mode", "type", "info", "custom_tags", "report", "scene_data", "stored_items", "deadline"}
)
