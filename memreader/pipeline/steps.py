"""The built-in steps of a read, each over the whole call (all scenes, all windows).

=============  ===========================================  ===================  ============
step           requires                                     produces             modes
=============  ===========================================  ===================  ============
normalize      scene_data, type                             scenes               fast, fine
parse          scenes                                       units                fast, fine
window         scenes, units                                windows              fast, fine
fast_items     windows, info, custom_tags                   items, emitted       fast
prepare_fine   windows, info, custom_tags                   fine_windows         fine
refine_input   stored_items, type, custom_tags              fine_windows         refine
extract        fine_windows                                 outcomes             fine, refine
filter         fine_windows, outcomes                       outcomes             fine, refine
rewrite        fine_windows, outcomes                       outcomes             fine, refine
fine_items     fine_windows, outcomes                       items, emitted       fine, refine
embed          emitted                                      items                all
=============  ===========================================  ===================  ============

One window's failure is that window's result: the LLM passes (:mod:`.passes`) turn an
unexpected exception into that window's fallback (``internal_error``) or a failed pass, item
building falls back to the raw window, and a failed embedding batch leaves only its items without
vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from memreader.config import FineConfig
from memreader.documents import normalize_doc
from memreader.embedders.languages import (
    README_SECTION,
    UNREADABLE_THRESHOLD,
    unreadable_note,
)
from memreader.emit import (
    chunk_positions,
    heading_indexes,
    make_item,
    memory_type_for,
    scene_digest,
    window_embedding_parts,
)
from memreader.errors import EmbeddingError
from memreader.extraction import (
    WindowInput,
    short_error,
)
from memreader.extraction.language import Language
from memreader.items import TextualMemoryItem
from memreader.parsers import part_notes, scene_units
from memreader.pipeline.chain import PerWindowStep, WindowWork
from memreader.pipeline.passes import Extract, Filter, FineItems, Rewrite
from memreader.pipeline.refine import RefineInput
from memreader.pipeline.runtime import ReaderRuntime
from memreader.pipeline.state import MODES, FineWindow, ReadState, WindowedScene
from memreader.pipeline.step import STEPS, Step
from memreader.report import WindowReport
from memreader.scene import Scene, normalize_chat
from memreader.windows import Unit, Window

__all__ = [
    "STEPS",
    "Embed",
    "Extract",
    "FastItems",
    "Filter",
    "FineItems",
    "Normalize",
    "Parse",
    "PrepareFine",
    "RefineInput",
    "Rewrite",
    "WindowStep",
    "default_steps",
]

logger = logging.getLogger(__name__)

SCENE_MODES = frozenset({"fast", "fine"})


@STEPS.register("normalize")
class Normalize(Step):
    """The caller's input as typed scenes (chat messages, or documents read within limits)."""

    name = "normalize"
    requires = ("scene_data", "type")
    produces = ("scenes",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data)
        else:
            state.scenes = normalize_doc(state.scene_data, **runtime.config.document_options())


@STEPS.register("parse")
class Parse(Step):
    """Each scene's parts as units of text, one parser per part type."""

    name = "parse"
    requires = ("scenes",)
    produces = ("units",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        state.units = [scene_units(scene) for scene in state.scenes]


@STEPS.register("window")
class WindowStep(Step):
    """Token-bounded, overlapping windows over each scene's units; one report entry each."""

    name = "window"
    requires = ("scenes", "units")
    produces = ("windows",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        windowed = []
        for scene, units in zip(state.scenes, state.units, strict=True):
            windows = self.windows_of(scene, units, runtime)
            reports = [
                WindowReport(scene.index, w.index, notes=part_notes(w, units)) for w in windows
            ]
            state.report.windows.extend(reports)
            windowed.append(
                WindowedScene(
                    scene,
                    units,
                    windows,
                    scene_digest(scene.type, units),
                    reports,
                    chunk_positions(windows, units, scene),
                    heading_indexes(units, scene),
                )
            )
        state.windows = windowed
        logger.debug(
            "%d scenes, %d windows", len(windowed), sum(len(ws.windows) for ws in windowed)
        )

    def windows_of(self, scene: Scene, units: list[Unit], runtime: ReaderRuntime) -> list[Window]:
        """The windows of one scene (a reader with another splitter overrides this)."""
        return runtime.windower.windows(units)


@STEPS.register("fast_items")
class FastItems(Step):
    """Fast mode: each window becomes one item, its text."""

    name = "fast_items"
    requires = ("windows", "info", "custom_tags")
    produces = ("items", "emitted")
    modes = frozenset({"fast"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = ["mode:fast", *state.custom_tags]
        result: list[list[TextualMemoryItem]] = []
        for ws in state.windows:
            items = []
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                try:
                    sources = ws.sources(window)
                    item = make_item(
                        memory=window.text,
                        info=state.info,
                        sources=sources,
                        memory_type=memory_type_for(sources),
                        tags=list(tags),
                        id_parts=(ws.scene.type, "fast", ws.digest, window.index),
                    )
                except Exception as exc:  # one window's failure is that window's record
                    entry.record_error(exc)
                    continue
                entry.items = 1
                items.append(item)
                state.emitted.append((item, entry))
                state.embedding_parts[item.id] = (
                    item.memory,
                    window_embedding_parts(
                        ws.windows, window.index, ws.units, runtime.config.embed_prefixes
                    ),
                )
            result.append(items)
        state.items = result


@STEPS.register("prepare_fine")
class PrepareFine(PerWindowStep):
    """Fine mode: each window's numbered lines, roles, sources and prompt language (prepared
    per window, chained with the LLM passes that follow)."""

    name = "prepare_fine"
    requires = ("windows", "info", "custom_tags")
    produces = ("fine_windows",)
    modes = frozenset({"fine"})

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = list(state.custom_tags)
        fine_windows, windows = [], []
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                windows.append((ws, window))
                fine_windows.append(
                    FineWindow(
                        position=position,
                        memory_text=window.text,
                        id_base=(ws.scene.type, "fine", ws.digest, window.index),
                        report=entry,
                        custom_tags=tags,
                        info=state.info,
                    )
                )
        state.fine_windows = fine_windows
        state.set("_prepare_fine_windows", windows)

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        ws, window = state.get("_prepare_fine_windows")[index]
        fw = state.fine_windows[index]
        fw.sources = ws.sources(window)
        lines = [(i + 1, s.line) for i, s in enumerate(window.segments)]
        roles = {i + 1: source.role for i, source in enumerate(fw.sources)}
        fw.report.language = runtime.language(window.text)
        fw.input = WindowInput(lines, roles, fw.report.language, tuple(fw.custom_tags))
        return
        yield  # a generator that asks no LLM

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        # Without its prepared lines the window cannot be asked about: it falls back whole.
        state.fine_windows[index].report.record_error(error)

    def end(self, state: ReadState, runtime: ReaderRuntime) -> None:
        state.values.pop("_prepare_fine_windows", None)


@STEPS.register("embed")
class Embed(Step):
    """Every item's memory embedded, in batched, cached calls. A batch that fails leaves its
    items without a vector, tagged ``embedding:failed``, and says so in their windows' reports;
    the other batches keep theirs.

    When the embedder can tell how much of a text it cannot read (an ``unreadable_share``
    method: the bundled English-only model; see :mod:`memreader.embedders.languages`), each
    window's embedded text is checked once: its report gets the share, and a note when the
    text is mostly unreadable; one warning per call names how many windows that is."""

    name = "embed"
    requires = ("emitted",)
    produces = ("items",)
    modes = frozenset(MODES)

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        made = state.emitted
        if not made or not runtime.embeds:
            return
        embedder = runtime.embedder
        size = getattr(embedder, "batch_size", None)
        size = size if isinstance(size, int) and size > 0 else 64
        for offset in range(0, len(made), size):
            batch = made[offset : offset + size]
            try:
                vectors = _embed_items(embedder, batch, state.embedding_parts)
                if len(vectors) != len(batch):
                    raise EmbeddingError(
                        f"{embedder.name}: {len(vectors)} vectors for {len(batch)} texts"
                    )
            except Exception as exc:  # a failed batch is its items' record, not the call's
                error = short_error(exc)
                logger.warning(
                    "embedding %d items failed, returning them without vectors: %s",
                    len(batch),
                    error,
                    exc_info=not isinstance(exc, EmbeddingError),
                )
                for item, entry in batch:
                    item.metadata.tags.append("embedding:failed")
                    entry.embedding_error = error
                continue
            for (item, _), vector in zip(batch, vectors, strict=True):
                item.metadata.embedding = vector
                item.metadata.embedding_model = embedder.name
        _note_unreadable(made, embedder, state.embedding_parts)


def _embedding_input(
    item: TextualMemoryItem, parts: dict[str, tuple[str, tuple[str, ...]]]
) -> tuple[str, ...]:
    """What is embedded for ``item``: its parts while its memory is what they were made from,
    else its memory."""
    made = parts.get(item.id)
    return made[1] if made is not None and made[0] == item.memory else (item.memory,)


def _embed_items(
    embedder: object,
    batch: Sequence[tuple[TextualMemoryItem, WindowReport]],
    parts: dict[str, tuple[str, tuple[str, ...]]],
) -> list[list[float]]:
    """The batch's vectors; items with parts go through ``embed_parts`` where the embedder
    has it (otherwise their parts are joined). An item whose memory changed since its parts
    were made is embedded as its memory."""
    inputs = [_embedding_input(item, parts) for item, _ in batch]
    embed_parts = getattr(embedder, "embed_parts", None)
    if embed_parts is not None and any(len(p) > 1 for p in inputs):
        vectors: list[list[float]] = embed_parts(inputs)
        return vectors
    return embedder.embed(["".join(p) for p in inputs])  # type: ignore[attr-defined,no-any-return]


def _note_unreadable(
    made: Sequence[tuple[TextualMemoryItem, WindowReport]],
    embedder: object,
    parts: dict[str, tuple[str, tuple[str, ...]]],
) -> None:
    """Record on each window's report the share of its embedded text (what was embedded for
    its items, joined) that ``embedder`` cannot read, with a note when that is
    :data:`~memreader.embedders.languages.UNREADABLE_THRESHOLD` or more, and log one warning
    for all such windows. Does nothing for an embedder without ``unreadable_share``. A check
    that fails leaves its window as it was (one warning with the first traceback)."""
    check = getattr(embedder, "unreadable_share", None)
    if not callable(check):
        return
    name = str(getattr(embedder, "name", type(embedder).__name__))
    windows: dict[int, tuple[WindowReport, list[str]]] = {}
    for item, entry in made:
        windows.setdefault(id(entry), (entry, []))[1].append("".join(_embedding_input(item, parts)))
    noted: list[float] = []
    failed: list[Exception] = []
    for entry, memories in windows.values():
        try:
            share = check(memories[0] if len(memories) == 1 else "\n".join(memories))
            if share is None:
                continue
            if not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
                raise EmbeddingError(f"unreadable_share gave {share!r}, not a share in [0, 1]")
        except Exception as exc:  # the check is advice: its failure never costs the window
            failed.append(exc)
            continue
        entry.unreadable_share = float(share)
        if share >= UNREADABLE_THRESHOLD:
            entry.notes.append(unreadable_note(share, name))
            noted.append(share)
    if failed:
        logger.warning(
            "%s: checking %d of %d windows for text the embedder cannot read failed: %s",
            name,
            len(failed),
            len(windows),
            short_error(failed[0]),
            exc_info=failed[0],
        )
    if noted:
        low, high = int(min(noted) * 100), int(max(noted) * 100)
        logger.warning(
            "%d of %d windows are mostly text the embedder %s cannot read (%s of their "
            "letters); their vectors say little about them (see the windows' report notes, "
            "and the README section '%s')",
            len(noted),
            len(windows),
            name,
            f"{low}%" if low == high else f"{low}% to {high}%",
            README_SECTION,
        )


def default_steps(
    fine: FineConfig | None = None, *, extract_prompts: Mapping[Language, str] | None = None
) -> list[Step]:
    """The steps of the simple reader for these fine-mode settings (the passes of
    ``fine.enabled_passes()``; ``extract_prompts`` replaces the extraction prompt)."""
    from memreader.pipeline.agent_steps import PassItems, ToolSchemas, iter_passes

    fine = fine if fine is not None else FineConfig()
    passes = fine.enabled_passes()
    steps: list[Step] = [
        Normalize(),
        Parse(),
        WindowStep(),
        FastItems(),
        PrepareFine(),
        RefineInput(),
        Extract(extract_prompts),
    ]
    if "filter" in passes:
        steps.append(Filter())
    if "rewrite" in passes:
        steps.append(Rewrite(user_only=fine.rewrite == "user_only"))
    extra = list(iter_passes(passes))
    steps += extra
    steps.append(FineItems(keep_empty=fine.empty_window == "fallback"))
    if extra:
        steps.append(PassItems())
    if "tool_schema" in passes:
        steps.append(ToolSchemas())
    steps.append(Embed())
    return steps
