"""A category's summary by the LLM (fine mode): one call merges the category's current items
into its old summary, and the answer is checked before it is kept.

The model sees the items numbered ``1..n`` (never an id it could invent) and the old summary
with its citations as those numbers; it answers sentences, each with the numbers of the items
it rests on. A number not shown is dropped (a sentence left citing nothing is dropped); a fact
the old summary cited is put back as its item's line when the answer left it out while the item
still holds; an answer with no citing sentence is asked again, then the deterministic list
stands in. Every repair and fallback is in the note of the update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memreader.categories.summaries import (
    MAX_LINE_CHARS,
    Sentence,
    deterministic_summary,
    render,
)
from memreader.extraction.prompts import numbered_lines
from memreader.llms.errors import LLMError
from memreader.llms.usage import UsageMeter
from memreader.scenes.clipping import one_line
from memreader.stores.category_types import StoredCategory, SummaryKind
from memreader.stores.records import StoredMemory

__all__ = ["SUMMARY_SCHEMA", "LLMSummary", "llm_summary", "read_answer", "summary_messages"]

MAX_SENTENCE_CHARS = 500
MAX_SENTENCES = 60
SLOT = "general_llm"

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sentences": {
            "type": "array",
            "maxItems": MAX_SENTENCES,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "refs": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "refs"],
            },
        }
    },
    "required": ["sentences"],
}

SYSTEM = (
    "You keep the summary of one category of a person's memories. You get the category, its "
    "OLD SUMMARY (each sentence followed by the numbers of the items it rests on) and the ITEMS "
    "the category holds now, numbered, newest first, each with the date it began to hold. "
    "Write the new summary: short sentences in the language of the items; keep every fact of "
    "the old summary whose items are still listed, add what the new items say, and where items "
    "disagree, the newer one holds. After each sentence give the numbers of the items it rests "
    "on; use only numbers from the ITEMS list, and every sentence needs at least one.\n"
    'Answer with JSON: {"sentences": [{"text": "...", "refs": [numbers]}]}.'
)


@dataclass
class LLMSummary:
    """What one summary call gave: the summary text, ``kind`` (``llm``, or ``deterministic``
    when the answer was refused), the notes on repairs, the calls and prompt characters."""

    summary: str
    kind: SummaryKind
    notes: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_chars: int = 0


def summary_messages(
    category: StoredCategory,
    shown: Sequence[StoredMemory],
    old: Sequence[Sentence],
) -> list[dict[str, str]]:
    """The call's messages: the category, the old summary (citations as item numbers) and the
    items, numbered."""
    number = {memory.id: n for n, memory in enumerate(shown, 1)}
    old_lines = []
    for sentence in old:
        cited = ", ".join(str(number[r]) for r in sentence.refs if r in number)
        old_lines.append(f"{one_line(sentence.text, MAX_SENTENCE_CHARS)} ({cited})")
    items = [(n, f"({_date(memory)}) {memory.item.memory}") for n, memory in enumerate(shown, 1)]
    user = (
        f"CATEGORY: {category.name}: {one_line(category.description, MAX_LINE_CHARS)}\n\n"
        f"OLD SUMMARY:\n{chr(10).join(old_lines) or '(none yet)'}\n\n"
        f"ITEMS:\n{numbered_lines(items)}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _date(memory: StoredMemory) -> str:
    when = memory.valid_from or memory.recorded_at
    return when.date().isoformat() if when is not None else "undated"


def read_answer(parsed: Any, shown_ids: Sequence[str]) -> tuple[list[Sentence], list[str]]:
    """The sentences of an answer, citations mapped to item ids, and the repairs made.

    Raises:
        ValueError: the answer has no sentence citing a listed item (the call asks again).
    """
    raw = parsed.get("sentences") if isinstance(parsed, Mapping) else None
    if not isinstance(raw, list):
        raise ValueError('answer with {"sentences": [{"text": ..., "refs": [numbers]}]}')
    sentences, forged, uncited = [], 0, 0
    for entry in raw[:MAX_SENTENCES]:
        text = entry.get("text") if isinstance(entry, Mapping) else None
        refs = entry.get("refs") if isinstance(entry, Mapping) else None
        if not isinstance(text, str) or not text.strip() or not isinstance(refs, list):
            uncited += 1
            continue
        ids = []
        for ref in refs:
            if isinstance(ref, int) and not isinstance(ref, bool) and 1 <= ref <= len(shown_ids):
                ids.append(shown_ids[ref - 1])
            else:
                forged += 1
        if not ids:
            uncited += 1
            continue
        sentences.append(Sentence(one_line(text, MAX_SENTENCE_CHARS), tuple(dict.fromkeys(ids))))
    if not sentences:
        raise ValueError(f"no sentence cites an item from the list (numbers 1 to {len(shown_ids)})")
    notes = []
    if forged:
        notes.append(f"dropped {forged} citation(s) of items not shown")
    if uncited:
        notes.append(f"dropped {uncited} sentence(s) citing no listed item")
    return sentences, notes


def llm_summary(
    router: Any,
    category: StoredCategory,
    shown: Sequence[StoredMemory],
    old: Sequence[Sentence],
    *,
    max_chars: int,
    meter: UsageMeter | None = None,
) -> LLMSummary:
    """The new summary of ``category`` from ``shown`` (its current items, the old summary's
    included) and ``old`` (the old summary, citing only current items)."""
    messages = summary_messages(category, shown, old)
    prompt_chars = sum(len(m["content"]) for m in messages)
    shown_ids = [memory.id for memory in shown]
    try:
        response = router.complete(
            SLOT,
            messages,
            schema=SUMMARY_SCHEMA,
            schema_name="category_summary",
            meter=meter,
            validate=lambda parsed: read_answer(parsed, shown_ids),
        )
    except LLMError as exc:
        fallback = deterministic_summary(shown, max_chars)
        note = f"the LLM's summary was refused ({type(exc).__name__}: {one_line(str(exc), 200)})"
        return LLMSummary(fallback, "deterministic", [note], 1, prompt_chars)
    sentences, notes = response.validated
    cited = {ref for sentence in sentences for ref in sentence.refs}
    by_id = {memory.id: memory for memory in shown}
    dropped = [r for s in old for r in s.refs if r in by_id and r not in cited]
    for memory_id in dict.fromkeys(dropped):
        line = one_line(by_id[memory_id].item.memory, MAX_LINE_CHARS)
        sentences.append(Sentence(line, (memory_id,)))
    if dropped:
        notes.append(f"re-added {len(set(dropped))} fact(s) of the old summary the answer left out")
    summary = _within(sentences, max_chars, notes)
    return LLMSummary(summary, "llm", notes, 1, prompt_chars)


def _within(sentences: list[Sentence], max_chars: int, notes: list[str]) -> str:
    kept: list[Sentence] = []
    for sentence in sentences:
        if len(render([*kept, sentence])) > max_chars and kept:
            notes.append(f"cut {len(sentences) - len(kept)} sentence(s) over max_chars")
            break
        kept.append(sentence)
    return render(kept)
