"""An :class:`~memreader.evaluation.results.EvalResult` shown: a Markdown table with one row per
conversation and a pooled row (:func:`conversation_table`), the pooled rates by question
category (:func:`category_table`), notes on what was left out and the store's size
(:func:`notes`), all three in :func:`report`; and its JSON text (:func:`to_json`).

>>> from memreader.evaluation.results import ConversationResult, EvalResult, QuestionResult
>>> q = QuestionResult("c1", "c1#q1", "Where?", 4, ("m1",), 1, 2, {500: True}, 3.0, (5.0,))
>>> result = EvalResult("f.json", "hybrid", (1,), (500,), 50, (ConversationResult(
...     "c1", 2, 40, 3, 1.25, (q,)),))
>>> table = conversation_table(result).splitlines()
>>> table[0].split(" | ")[:7]
['| conversation', 'sessions', 'messages', 'memories', 'questions', 'skipped', 'recall@1']
>>> table[2]
'| c1 | 2 | 40 | 3 | 1 | 0 | 1.000 | 0.000 | 1.000 | 3.0 / 3.0 | 5.0 / 5.0 | 1.2 |'
>>> table[3].startswith("| **all** | 2 | 40 | 3 | 1 | 0 | 1.000 |")
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memreader.evaluation.results import ConversationResult, EvalResult, Latency, Scores

__all__ = ["category_table", "conversation_table", "notes", "report", "to_json"]

#: Unknown evidence ids shown by name in the notes (the rest are counted).
SHOWN_UNKNOWN = 8


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ms(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1f} / {high:.1f}"


def _rates(scores: Scores) -> list[str]:
    return [
        *(_rate(v) for v in scores.recall.values()),
        *(_rate(v) for v in scores.message_recall.values()),
        *(_rate(v) for v in scores.context.values()),
    ]


def _rate_columns(result: EvalResult) -> list[str]:
    return [
        *(f"recall@{k}" for k in result.recall_at),
        *(f"msg@{k}" for k in result.recall_at),
        *(f"ctx@{b}" for b in result.budgets),
    ]


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def conversation_table(result: EvalResult) -> str:
    """One row per conversation and a pooled row (``**all**``: every question weighs the
    same): its size, questions asked and skipped (no known evidence), the rates, latencies
    and ingestion seconds."""
    columns = ["conversation", "sessions", "messages", "memories", "questions", "skipped"]
    columns += [*_rate_columns(result), "search p50/p95 ms", "context p50/p95 ms", "ingest s"]
    rows = [
        _row(result, c.id, (c,), result.scores(c), result.latency(c)) for c in result.conversations
    ]
    everything = result.conversations
    rows.append(_row(result, "**all**", everything, result.pooled(), result.latency()))
    return _table(columns, rows)


def _row(
    result: EvalResult,
    label: str,
    convs: Sequence[ConversationResult],
    scores: Scores,
    latency: Latency,
) -> list[str]:
    memories = [c.memories for c in convs]
    seconds = [c.ingest_s for c in convs]
    return [
        label,
        str(sum(c.sessions for c in convs)),
        str(sum(c.messages for c in convs)),
        "-" if None in memories else str(sum(m or 0 for m in memories)),
        str(scores.questions),
        str(sum(c.unanswerable for c in convs)),
        *_rates(scores),
        _ms(latency.search_p50, latency.search_p95),
        _ms(latency.context_p50, latency.context_p95),
        "-" if None in seconds else f"{sum(s or 0.0 for s in seconds):.1f}",
    ]


def category_table(result: EvalResult) -> str:
    """The pooled rates of each question category."""
    columns = ["category", "questions", *_rate_columns(result)]
    rows = [[name, str(s.questions), *_rates(s)] for name, s in result.by_category().items()]
    return _table(columns, rows)


def notes(result: EvalResult) -> list[str]:
    """What a reader of the tables should know: the settings, what the loader left out, the
    store's size."""
    convs = result.conversations
    unknown = [e for c in convs for e in c.unknown_evidence]
    lines = [
        f"{result.name}: conversations {len(convs)}, messages {result.messages}, "
        f"questions {len(result.questions)}; search mode {result.mode}"
        + (f", config {result.config}" if result.config else ""),
        f"recall@k: a hit among the k best memories cites an evidence message; msg@k: an "
        f"evidence message among the first k messages named by the passages of the "
        f"{result.message_k} best hits; ctx@B: the context block of B tokens holds one whole",
    ]
    skipped = sum(c.unanswerable for c in convs)
    other = sum(c.other_categories for c in convs)
    if unknown:
        shown = ", ".join(unknown[:SHOWN_UNKNOWN]) + (
            ", ..." if len(unknown) > SHOWN_UNKNOWN else ""
        )
        lines.append(f"evidence ids naming no message: {len(unknown)} ({shown})")
    if skipped:
        lines.append(f"questions skipped, no known evidence: {skipped}")
    if other:
        lines.append(f"questions of other categories, not asked: {other}")
    if result.store_bytes is not None and result.bytes_per_message is not None:
        lines.append(
            f"store: {result.store_bytes:,} bytes, {result.bytes_per_message:,.0f} per message"
        )
    return lines


def report(result: EvalResult) -> str:
    """The conversation table, the category table and the notes, as Markdown."""
    parts = [conversation_table(result), category_table(result), "\n".join(notes(result))]
    return "\n\n".join(parts)


def to_json(result: EvalResult) -> str:
    """:meth:`EvalResult.to_dict` as JSON text (indented, one line per value, non-ASCII kept);
    :meth:`EvalResult.from_dict` of ``json.loads`` of it equals ``result``."""
    return json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n"
