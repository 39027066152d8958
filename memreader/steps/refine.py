"""Refinement's input step: stored items, checked, as fine windows within the request budget.

Stored items come from outside the call (a JSONL file, a database) and are not trusted:
:func:`check_stored_item` refuses an item whose sources could not have been made by a reader (no
sources, negative or absurd indexes, an unknown role, a role, name, time or id that is not one
short line, text that is not valid Unicode). A refused item is that item's error record (its
window report says why; its result list is empty); the other items are refined.

An item's lines are held to the reader's window budget (``window.max_tokens``): the sources are
cut by a windower without overlap, as a chat's messages are, so a request never grows with the
item (3,000 sources once made one 3 MB prompt). An item that needs more than one request is
refined in several, at most :data:`MAX_REQUESTS_PER_ITEM`; its window reports say so, and text
beyond that is not sent (its report says how much).
"""

from __future__ import annotations

import logging

from memreader.errors import InputError
from memreader.extraction import WindowInput
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.pipeline import Step
from memreader.scenes.scene import ROLES
from memreader.scenes.text_checks import check_nested_text, check_text, printable
from memreader.steps.categorize import category_menu
from memreader.steps.fine import extraction_slot
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import FineWindow, ReadState
from memreader.windowing.parsers import line_prefix
from memreader.windowing.windows import Unit, Windower

__all__ = [
    "MAX_LABEL_CHARS",
    "MAX_REQUESTS_PER_ITEM",
    "MAX_SOURCE_INDEX",
    "RefineInput",
    "check_stored_item",
]

logger = logging.getLogger(__name__)

#: The largest scene, message or part index a stored source may name.
MAX_SOURCE_INDEX = 10_000_000
#: The longest role, name, chat time or message id a stored source may carry (one line).
MAX_LABEL_CHARS = 256
#: The most LLM requests one stored item is refined in (each within ``window.max_tokens``).
MAX_REQUESTS_PER_ITEM = 8

_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def check_stored_item(item: TextualMemoryItem, position: int) -> None:
    """Raise :class:`InputError` naming the item and the source when ``item`` could not have
    been made by a reader (see the module docstring)."""
    where = f"item {position} ({printable(item.id)})"
    if not item.metadata.sources:
        raise InputError(f"{where} has no sources to refine from")
    for k, source in enumerate(item.metadata.sources):
        at = f"{where}, source {k}"
        for name in ("scene_index", "message_index", "part_index"):
            value = getattr(source, name)
            if value is not None and not 0 <= value <= MAX_SOURCE_INDEX:
                raise InputError(f"{at}: {name} {value} is not between 0 and {MAX_SOURCE_INDEX}")
        if source.role is not None and source.role not in ROLES:
            raise InputError(
                f"{at}: role {source.role[:40]!r} is not one of {', '.join(sorted(ROLES))}"
            )
        for name in ("name", "chat_time", "message_id"):
            _check_label(getattr(source, name), f"{at}: {name}")
        check_text(source.content, at, error=InputError)
    # Refined items copy the stored one's info, tags and sources: every text in it must be
    # writable as UTF-8 (a dict's types are checked as it is read, ``info`` is not).
    check_nested_text(item.model_dump(exclude={"metadata": {"embedding"}}), where, error=InputError)


def _check_label(value: str | None, where: str) -> None:
    if value is None:
        return
    check_text(value, where, error=InputError)
    if len(value) > MAX_LABEL_CHARS:
        raise InputError(f"{where} has {len(value)} characters, more than {MAX_LABEL_CHARS}")
    if any(c in _LINE_BREAKS for c in value):
        raise InputError(f"{where} {value[:40]!r} holds a line break (it must be one line)")


@STEPS.register("refine_input")
class RefineInput(Step):
    """Refinement: each stored item checked, then rebuilt from its text and sources as one
    fine window, or several when its lines exceed the window budget."""

    name = "refine_input"
    requires = ("stored_items", "type", "custom_tags")
    produces = ("fine_windows",)
    modes = frozenset({"refine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        budget = runtime.windower
        cutter = Windower(budget.max_tokens, 0, budget.tokenizer, budget.splitter)
        fine_windows: list[FineWindow] = []
        for position, stored in enumerate(state.stored_items):
            try:
                if isinstance(stored, InputError):
                    raise stored
                check_stored_item(stored, position)
            except InputError as exc:
                entry = WindowReport(0, position, status="error", error=str(exc)[:300])
                state.report.windows.append(entry)
                logger.warning("stored item %d is not refined: %s", position, exc)
                continue
            fine_windows.extend(_windows_of(stored, position, state, runtime, cutter))
        state.fine_windows = fine_windows


def _windows_of(
    item: TextualMemoryItem,
    position: int,
    state: ReadState,
    runtime: ReaderRuntime,
    cutter: Windower,
) -> list[FineWindow]:
    """The fine windows of one checked stored item."""
    sources = list(item.metadata.sources)
    units = [Unit(s.content, line_prefix(s.role, s.chat_time, s.name)) for s in sources]
    windows = cutter.windows(units, state.check_deadline)
    kept = windows[:MAX_REQUESTS_PER_ITEM]
    info = {
        **item.metadata.info,
        "user_id": item.metadata.user_id,
        "session_id": item.metadata.session_id,
    }
    old = [t for t in item.metadata.tags if not t.startswith(("mode:", "fallback:"))]
    tags = list(dict.fromkeys([*old, *state.custom_tags]))
    language = runtime.language(item.memory)
    menu = category_menu(runtime.config.categories)
    slot = extraction_slot(runtime, state.type)
    made = []
    for k, window in enumerate(kept):
        parts = [_part(sources[s.unit], s.start, s.end) for s in window.segments]
        lines = [(i + 1, s.line) for i, s in enumerate(window.segments)]
        roles = {i + 1: p.role for i, p in enumerate(parts)}
        entry = WindowReport(parts[0].scene_index, position, language=language)
        if len(windows) > 1:
            entry.notes.append(
                f"stored item {item.id} is refined in {len(kept)} requests of at most "
                f"{cutter.max_tokens} tokens (window.max_tokens); this is request {k + 1}"
            )
        if k == len(kept) - 1 and len(windows) > len(kept):
            skipped = sum(len(w.text) for w in windows[len(kept) :])
            entry.notes.append(
                f"{skipped} characters of its sources beyond {MAX_REQUESTS_PER_ITEM} requests "
                "were not sent to the model"
            )
        state.report.windows.append(entry)
        made.append(
            FineWindow(
                position=position,
                input=WindowInput(lines, roles, language, tuple(tags), menu, slot=slot),
                sources=parts,
                memory_text=item.memory if len(windows) == 1 else window.text,
                # The first request keeps the id base of a one-request item: ids stay stable.
                id_base=(state.type, "refine", item.id, *((k,) if k else ())),
                report=entry,
                custom_tags=tags,
                info=info,
                refined_from=item.id,
            )
        )
    return made


def _part(source: SourceMessage, start: int, end: int) -> SourceMessage:
    """``source`` narrowed to ``content[start:end]`` (its span moved along when it has one)."""
    if start == 0 and end == len(source.content):
        return source
    span = None if source.span is None else (source.span[0] + start, source.span[0] + end)
    return source.model_copy(update={"content": source.content[start:end], "span": span})
