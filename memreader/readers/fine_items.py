"""Fine mode's emit step: items from a window's outcome, and the report of that window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memreader.emit import make_item, memory_type_for
from memreader.extraction import WindowOutcome
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.report import WindowReport


def _unique(tags: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(tags))


def fine_window_items(
    outcome: WindowOutcome,
    sources: Sequence[SourceMessage],
    *,
    memory_text: str,
    info: Mapping[str, Any],
    custom_tags: Sequence[str],
    id_base: Sequence[object],
    keep_empty: bool,
    report: WindowReport,
) -> list[TextualMemoryItem]:
    """The items of one window (not yet embedded), and its report filled in.

    ``sources[i]`` is the source of the line numbered ``i + 1`` in the prompt.
    """
    report.filter_status, report.filter_dropped = outcome.filter.status, outcome.filter.changed
    report.rewrite_status, report.rewrite_changed = outcome.rewrite.status, outcome.rewrite.changed
    report.pass_errors = [e for e in (outcome.filter.error, outcome.rewrite.error) if e]
    report.truncated = outcome.truncated
    report.memories_over_limit = outcome.over_limit
    reason = outcome.fallback_reason
    if outcome.memories is not None and not outcome.memories:
        if outcome.truncated:
            # Cut off before its first complete memory (after every re-ask): not an empty
            # window, a failed one; the raw window stands in.
            reason = "truncated"
        elif not keep_empty:
            report.status = "empty"
            report.uncited_messages = sorted({s.message_index for s in sources})
            return []
        else:
            reason = "empty"
    if reason is not None:
        report.status, report.fallback_reason, report.error = "fallback", reason, outcome.error
        item = make_item(
            memory=memory_text,
            info=info,
            sources=list(sources),
            memory_type=memory_type_for(sources),
            tags=_unique(["mode:fine", f"fallback:{reason}", *custom_tags]),
            id_parts=(*id_base, "fallback"),
            background=outcome.summary,
        )
        report.items = 1
        return [item]
    assert outcome.memories is not None
    items = []
    cited: set[int] = set()
    whole_window = False
    for k, memory in enumerate(outcome.memories):
        own = [sources[i - 1] for i in memory.source_ids]
        tags = ["mode:fine", *memory.tags, *custom_tags, *(f"repaired:{r}" for r in memory.repairs)]
        if not own:
            # The model cited nothing usable: the whole window is the honest provenance.
            own = list(sources)
            tags.append("sources:window")
            whole_window = True
        cited.update(memory.source_ids)
        items.append(
            make_item(
                memory=memory.value,
                info=info,
                sources=own,
                memory_type=memory.memory_type,
                tags=_unique(tags),
                id_parts=(*id_base, k),
                key=memory.key,
                background=outcome.summary,
            )
        )
    if not whole_window:
        # A message split over several lines counts as cited when any of its lines is.
        cited_messages = {sources[i - 1].message_index for i in cited}
        report.uncited_messages = sorted({s.message_index for s in sources} - cited_messages)
    report.items = len(items)
    return items
