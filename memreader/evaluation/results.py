"""What an evaluation found: each question's ranks and budgets held
(:class:`QuestionResult`), each conversation's (:class:`ConversationResult`), and the whole run
(:class:`EvalResult`), with the rates derived from them (:class:`Scores`: per conversation,
pooled over every question, by category) and a JSON form that reads back equal.

>>> q = QuestionResult("c1", "c1#q1", "Where?", 4, ("m1",), 1, 2, {500: True}, 3.0, (5.0,))
>>> conv = ConversationResult("c1", 1, 1, 1, 0.5, (q,))
>>> result = EvalResult("f.json", "hybrid", (1, 3), (500,), 50, (conv,))
>>> s = result.pooled()
>>> s.recall, s.message_recall, s.context
({1: 1.0, 3: 1.0}, {1: 0.0, 3: 1.0}, {500: 1.0})
>>> EvalResult.from_dict(result.to_dict()) == result
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memreader.evaluation.data import Category

__all__ = ["ConversationResult", "EvalResult", "Latency", "QuestionResult", "Scores", "percentile"]


@dataclass(frozen=True)
class QuestionResult:
    """One question asked: ``memory_rank``, the rank of the first hit citing evidence among the
    ``max(recall_at)`` best; ``message_rank``, the rank of the first evidence message among the
    messages the passages of ``message_k`` hits name; ``held``, per budget, whether the context
    block held an evidence message; the time of its search and of each context call (ms);
    with miss analysis, ``deep_rank``: where evidence ranked among a deep search (``None``:
    not in it; only for a question not at rank 1, ``deep_searched``)."""

    conversation: str
    id: str
    question: str
    category: Category | None
    evidence: tuple[str, ...]
    memory_rank: int | None
    message_rank: int | None
    held: Mapping[int, bool]
    search_ms: float
    context_ms: tuple[float, ...]
    deep_rank: int | None = None
    deep_searched: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The question as JSON holds it (budgets as string keys)."""
        out = {
            "conversation": self.conversation,
            "id": self.id,
            "question": self.question,
            "category": self.category,
            "evidence": list(self.evidence),
            "memory_rank": self.memory_rank,
            "message_rank": self.message_rank,
            "held": {str(b): v for b, v in self.held.items()},
            "search_ms": self.search_ms,
            "context_ms": list(self.context_ms),
        }
        if self.deep_searched:
            out["deep_rank"] = self.deep_rank
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionResult:
        """The question :meth:`to_dict` wrote."""
        return cls(
            data["conversation"],
            data["id"],
            data["question"],
            data["category"],
            tuple(data["evidence"]),
            data["memory_rank"],
            data["message_rank"],
            {int(b): bool(v) for b, v in data["held"].items()},
            data["search_ms"],
            tuple(data["context_ms"]),
            data.get("deep_rank"),
            "deep_rank" in data,
        )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0-1) of ``values``, nearest rank; ``None`` for none.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 0.5), percentile([], 0.95)
    (3.0, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass(frozen=True)
class Scores:
    """The rates of some questions (``None`` when there are none): ``recall`` (memory level)
    and ``message_recall`` at each k, ``context`` at each budget."""

    questions: int
    recall: dict[int, float | None]
    message_recall: dict[int, float | None]
    context: dict[int, float | None]

    @classmethod
    def of(
        cls, results: Sequence[QuestionResult], recall_at: Sequence[int], budgets: Sequence[int]
    ) -> Scores:
        """The rates of ``results``."""
        n = len(results)

        def rate(hits: int) -> float | None:
            return hits / n if n else None

        def at(rank: int | None, k: int) -> bool:
            return rank is not None and rank <= k

        return cls(
            n,
            {k: rate(sum(at(r.memory_rank, k) for r in results)) for k in recall_at},
            {k: rate(sum(at(r.message_rank, k) for r in results)) for k in recall_at},
            {b: rate(sum(r.held[b] for r in results)) for b in budgets},
        )

    def columns(self, digits: int = 3) -> dict[str, Any]:
        """The rates by column name: ``recall@k``, ``msg@k``, ``ctx@B`` (rounded)."""

        def show(value: float | None) -> float | None:
            return None if value is None else round(value, digits)

        out: dict[str, Any] = {"questions": self.questions}
        out.update({f"recall@{k}": show(v) for k, v in self.recall.items()})
        out.update({f"msg@{k}": show(v) for k, v in self.message_recall.items()})
        out.update({f"ctx@{b}": show(v) for b, v in self.context.items()})
        return out


@dataclass(frozen=True)
class Latency:
    """p50 and p95 (ms) of the searches and of the context calls (one per budget)."""

    search_p50: float | None
    search_p95: float | None
    context_p50: float | None
    context_p95: float | None

    @classmethod
    def of(cls, results: Sequence[QuestionResult]) -> Latency:
        """The latencies of ``results``."""
        search = [r.search_ms for r in results]
        context = [ms for r in results for ms in r.context_ms]
        return cls(
            percentile(search, 0.5),
            percentile(search, 0.95),
            percentile(context, 0.5),
            percentile(context, 0.95),
        )

    def columns(self) -> dict[str, float | None]:
        """The latencies by column name (ms, one decimal)."""
        return {
            name: None if value is None else round(value, 1)
            for name, value in (
                ("search_p50_ms", self.search_p50),
                ("search_p95_ms", self.search_p95),
                ("context_p50_ms", self.context_p50),
                ("context_p95_ms", self.context_p95),
            )
        }


def _category_name(category: Category | None) -> str:
    return "-" if category is None else str(category)


def _category_order(name: str) -> tuple[int, int, str]:
    """Numbers in order, then names, then ``-`` (no category)."""
    if name == "-":
        return (2, 0, name)
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


@dataclass(frozen=True)
class ConversationResult:
    """One conversation measured: its size (``memories``: what its adds stored, ``None`` for a
    store read earlier), the seconds its ingestion took, its questions, and what the loader
    left out of them."""

    id: str
    sessions: int
    messages: int
    memories: int | None
    ingest_s: float | None
    questions: tuple[QuestionResult, ...]
    unknown_evidence: tuple[str, ...] = ()
    unanswerable: int = 0
    other_categories: int = 0


@dataclass(frozen=True)
class EvalResult:
    """A whole evaluation: its settings, each conversation's results, and the store file's
    size (``None`` when not known: a store not in a SQLite file of the run's own)."""

    name: str
    mode: str
    recall_at: tuple[int, ...]
    budgets: tuple[int, ...]
    message_k: int
    conversations: tuple[ConversationResult, ...]
    store_bytes: int | None = None
    config: str = ""

    @property
    def questions(self) -> tuple[QuestionResult, ...]:
        """Every question asked, conversation by conversation."""
        return tuple(q for c in self.conversations for q in c.questions)

    @property
    def messages(self) -> int:
        """How many messages were read."""
        return sum(c.messages for c in self.conversations)

    @property
    def bytes_per_message(self) -> float | None:
        """The store file's bytes per message read."""
        if self.store_bytes is None or not self.messages:
            return None
        return self.store_bytes / self.messages

    def scores(self, conversation: ConversationResult | None = None) -> Scores:
        """The rates of one conversation's questions."""
        asked = self.questions if conversation is None else conversation.questions
        return Scores.of(asked, self.recall_at, self.budgets)

    def pooled(self) -> Scores:
        """The rates over every question (each question weighs the same)."""
        return self.scores()

    def by_category(self, conversation: ConversationResult | None = None) -> dict[str, Scores]:
        """The rates of each category's questions (keys as text; ``-``: no category)."""
        asked = self.questions if conversation is None else conversation.questions
        names = sorted({_category_name(q.category) for q in asked}, key=_category_order)
        return {
            name: Scores.of(
                [q for q in asked if _category_name(q.category) == name],
                self.recall_at,
                self.budgets,
            )
            for name in names
        }

    def latency(self, conversation: ConversationResult | None = None) -> Latency:
        """The latencies of one conversation's questions, or of all."""
        return Latency.of(self.questions if conversation is None else conversation.questions)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON holds it: settings, pooled rates and latencies, rates by
        category, and each conversation's (its questions one by one); :meth:`from_dict` reads
        it back."""
        return {
            "name": self.name,
            "config": self.config,
            "mode": self.mode,
            "recall_at": list(self.recall_at),
            "budgets": list(self.budgets),
            "message_k": self.message_k,
            "store_bytes": self.store_bytes,
            "bytes_per_message": self.bytes_per_message,
            "pooled": self._summary(None),
            "conversations": [self._summary(c) for c in self.conversations],
        }

    def _summary(self, conv: ConversationResult | None) -> dict[str, Any]:
        head: dict[str, Any]
        if conv is None:
            convs, head = self.conversations, {"conversations": len(self.conversations)}
        else:
            convs, head = (conv,), {"id": conv.id}
        known = [c.memories for c in convs]
        timed = [c.ingest_s for c in convs]
        return (
            head
            | {
                "sessions": sum(c.sessions for c in convs),
                "messages": sum(c.messages for c in convs),
                "memories": None if None in known else sum(m or 0 for m in known),
                "ingest_s": None if None in timed else sum(t or 0.0 for t in timed),
                "unknown_evidence": [e for c in convs for e in c.unknown_evidence],
                "unanswerable": sum(c.unanswerable for c in convs),
                "other_categories": sum(c.other_categories for c in convs),
            }
            | self.scores(conv).columns()
            | self.latency(conv).columns()
            | {"by_category": {k: s.columns() for k, s in self.by_category(conv).items()}}
            | ({} if conv is None else {"per_question": [q.to_dict() for q in conv.questions]})
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """The result :meth:`to_dict` wrote (what is derived is derived again)."""
        conversations = tuple(
            ConversationResult(
                c["id"],
                c["sessions"],
                c["messages"],
                c["memories"],
                c["ingest_s"],
                tuple(QuestionResult.from_dict(q) for q in c["per_question"]),
                tuple(c["unknown_evidence"]),
                c["unanswerable"],
                c["other_categories"],
            )
            for c in data["conversations"]
        )
        return cls(
            data["name"],
            data["mode"],
            tuple(data["recall_at"]),
            tuple(data["budgets"]),
            data["message_k"],
            conversations,
            data["store_bytes"],
            data.get("config", ""),
        )
