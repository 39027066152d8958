"""The simple baseline ``benchmarks/evidence_retrieval.py`` measures beside memreader, on the
same data and with the same checks (:mod:`memreader.evaluation.matching`): what a caller gets
with no memory library at all.

**BM25 + MiniLM over single messages, reciprocal-rank fused, packed whole as lines.** Each
message of a conversation is one document, its line ``Name: content`` (the role when the
message has no name). A question ranks them two ways: BM25 Okapi (k1 1.2, b 0.75) over the
lowercased ``\\w+`` tokens of the lines, and the cosine of the question's vector with each
line's, from memreader's default local embedder (MiniLM,
``build_embedder({"backend": "local"})``); the two lists are fused by reciprocal rank
(``1 / (60 + rank)`` summed; the BM25 list holds only the lines sharing a word with the
question). The context at a budget is the lines in fused order, each whole or not at all (a
line that does not fit is skipped and the next tried), one per line, counted in cl100k_base
tokens (``memreader.windowing.tokens.get_tokenizer()``).

Reported at the message level, since each document is one message: ``msg@k`` (an evidence
message among the first k) and ``ctx@B`` (the packed lines hold an evidence message's whole
text). The BM25 here is a tiny hand-written one (:class:`BM25`), about 30 lines: enough for a
baseline, not a search engine.

>>> bm25 = BM25([tokens("Ana: I moved to Porto"), tokens("Bo: I like chess")])
>>> [round(s, 3) for s in bm25.scores(tokens("where did Ana move? Porto"))]
[1.386, 0.0]
>>> fuse([[2, 0], [0, 1, 2]])
[0, 2, 1]
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from memreader.evaluation import (
    ConversationResult,
    EvalConversation,
    EvalMessage,
    EvalResult,
    EvalSet,
    QuestionResult,
    holds,
    normalise_text,
)

__all__ = ["BM25", "LABEL", "baseline", "fuse", "line", "pack", "tokens"]

#: The row's name in the tables.
LABEL = "baseline: BM25 + {embedder} lines, RRF"
#: Reciprocal-rank fusion's constant.
RRF_K = 60
_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """The lowercased ``\\w+`` tokens of ``text``."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over tokenised documents (``k1`` 1.2, ``b`` 0.75; idf ``ln(1 + (N - n +
    0.5) / (n + 0.5))``, never negative)."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.counts = [Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        self.average = sum(self.lengths) / max(1, len(documents))
        df: Counter[str] = Counter(term for doc in self.counts for term in doc)
        n = len(documents)
        self.idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """Each document's score for ``query`` (its tokens)."""
        terms = [t for t in set(query) if t in self.idf]
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1))
            out.append(
                sum(
                    self.idf[t] * counts[t] * (self.k1 + 1) / (counts[t] + norm)
                    for t in terms
                    if counts[t]
                )
            )
        return out


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """The documents of ``rankings`` (each a list of indexes, best first) by reciprocal-rank
    fusion, best first (ties: the lower index first)."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda doc: (-score[doc], doc))


def line(message: EvalMessage) -> str:
    """A message as the baseline shows and indexes it: ``Name: content``."""
    return f"{message.name or message.role}: {message.content}"


def pack(lines: Sequence[str], counts: Sequence[int], budget: int, tokenizer: Any) -> str:
    """``lines`` (best first; ``counts``: their tokens) joined by newlines within ``budget``
    tokens: each line whole or skipped. The sum of the counts bounds the block's; the block
    is counted again at the end and lines dropped from its end while it is over."""
    kept: list[str] = []
    used = 0
    for text, count in zip(lines, counts, strict=True):
        cost = count + (1 if kept else 0)
        if used + cost <= budget:
            kept.append(text)
            used += cost
    while kept and tokenizer.count("\n".join(kept)) > budget:
        kept.pop()
    return "\n".join(kept)


def baseline(
    data: EvalSet, budgets: Sequence[int], recall_at: Sequence[int], embedder: Any
) -> EvalResult:
    """The baseline measured on ``data`` (see the module): each question's message rank and
    budgets held, as an :class:`EvalResult` whose ``memory_rank`` is ``None`` (it has no
    memories: its recall is ``msg@k``)."""
    from memreader.windowing.tokens import get_tokenizer

    tokenizer = get_tokenizer()
    convs = []
    for conv in data.conversations:
        started = time.perf_counter()
        index = _Index(conv, embedder, tokenizer)
        seconds = time.perf_counter() - started
        asked = tuple(index.ask(q, budgets, tokenizer) for q in conv.questions)
        convs.append(
            ConversationResult(
                conv.id,
                len(conv.sessions),
                conv.messages,
                conv.messages,
                seconds,
                asked,
                conv.unknown_evidence,
                conv.unanswerable,
                conv.other_categories,
            )
        )
    return EvalResult(
        data.name, "bm25+vector rrf", tuple(recall_at), tuple(budgets), 0, tuple(convs)
    )


class _Index:
    """One conversation's lines, their BM25 index, unit vectors and token counts."""

    def __init__(self, conv: EvalConversation, embedder: Any, tokenizer: Any) -> None:
        self.conv = conv
        self.messages = [m for s in conv.sessions for m in s.messages]
        self.lines = [line(m) for m in self.messages]
        self.bm25 = BM25([tokens(text) for text in self.lines])
        self.vectors = _unit(embedder.embed(self.lines))
        self.counts = [tokenizer.count(text) for text in self.lines]
        self.embedder = embedder

    def ask(self, question: Any, budgets: Sequence[int], tokenizer: Any) -> QuestionResult:
        started = time.perf_counter()
        lexical = self.bm25.scores(tokens(question.question))
        by_words = sorted((i for i, s in enumerate(lexical) if s > 0), key=lambda i: -lexical[i])
        query = _unit(self.embedder.embed([question.question]))[0]
        by_vector = list(np.argsort(-(self.vectors @ query), kind="stable"))
        order = fuse([by_words, [int(i) for i in by_vector]])
        search_ms = (time.perf_counter() - started) * 1000
        evidence = set(question.evidence)
        rank = next((r for r, i in enumerate(order, 1) if self.messages[i].id in evidence), None)
        texts = [normalise_text(self.conv.message(e).content) for e in question.evidence]
        held, context_ms = {}, []
        for budget in budgets:
            started = time.perf_counter()
            block = pack(
                [self.lines[i] for i in order], [self.counts[i] for i in order], budget, tokenizer
            )
            context_ms.append((time.perf_counter() - started) * 1000 + search_ms)
            held[budget] = holds(block, [t for t in texts if t])
        return QuestionResult(
            self.conv.id,
            question.id,
            question.question,
            question.category,
            question.evidence,
            None,
            rank,
            held,
            search_ms,
            tuple(context_ms),
        )


def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1, norms)
