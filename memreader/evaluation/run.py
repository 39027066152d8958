"""The runner: an :class:`~memreader.evaluation.data.EvalSet` read into a fresh store through
the public API, then every question asked of its conversation, offline (no LLM, no judge).

Each conversation is one owner (``user_id`` its id), read session by session with
``m.add(messages, user_id=conv, session_id=f"{conv}/{session}")`` (fast mode unless the config
says otherwise), into ``Memory(config, store="sqlite:///<folder>/eval.db")``. Then, for each
question (:mod:`memreader.evaluation.matching` has the checks):

- **recall@k** (memory level): ``m.search(question, user_id=conv, k=max(recall_at))``; the
  rank of the first hit citing an evidence message;
- **message-level recall@k**: a hit is a whole memory (a window of ~15 chat messages), which
  flatters recall@k against systems that return single messages, so the messages the hits
  name are ranked too: ``m.search(question, user_id=conv, k=message_k)`` (50: enough hits for
  k=10 distinct messages), the messages named by all its hits' passages, best passage score
  first, each once; the rank of the first evidence message among them;
- **context recall at each budget**: whether ``m.context(question, user_id=conv,
  max_tokens=B).text`` holds an evidence message's whole text;
- **latency**: each search (the recall@k one) and each context call, after one warm-up query;
- with ``miss_analysis``, a question not found at rank 1 is searched again with
  :data:`MISS_DEPTH` hits: where its evidence ranks there (``deep_rank``).

>>> from memreader.evaluation.data import EvalConversation, EvalMessage, EvalQuestion, EvalSession
>>> said = EvalMessage("m1", "user", "I adopted a beagle called Biscuit.", name="Ana")
>>> data = EvalSet("tiny", (EvalConversation("c1", (EvalSession("s1", (said,)),),
...     (EvalQuestion("c1#q1", "What is Ana's beagle called?", ("m1",)),)),))
>>> result = evaluate(data, {"config": {"embedder": {"backend": "hash"}}}, budgets=(200,))
>>> q = result.questions[0]
>>> q.memory_rank, q.message_rank, q.held
(1, 1, {200: True})
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memreader.errors import InputError
from memreader.evaluation.data import EvalConversation, EvalQuestion, EvalSet, normalise_text
from memreader.evaluation.matching import cites, first_rank, holds, matches, ranked_messages
from memreader.evaluation.results import ConversationResult, EvalResult, QuestionResult
from memreader.stores.hits import SEARCH_MODES, SearchMode

if TYPE_CHECKING:
    from memreader.front import Memory
    from memreader.front.config import ConfigLike

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_RECALL_AT",
    "MESSAGE_K",
    "MISS_DEPTH",
    "STORE_FILE",
    "Progress",
    "evaluate",
]

log = logging.getLogger(__name__)

#: The context budgets measured by default (cl100k_base tokens).
DEFAULT_BUDGETS: tuple[int, ...] = (200, 500, 1000, 2000)
#: The ranks recall is measured at by default.
DEFAULT_RECALL_AT: tuple[int, ...] = (1, 3, 10)
#: The hits whose passages name the messages message-level recall ranks.
MESSAGE_K = 50
#: The hits a miss analysis searches.
MISS_DEPTH = 200
#: The store's file name in its folder.
STORE_FILE = "eval.db"

#: What ``evaluate(on_progress=...)`` calls: (stage, done, total); stage ``"ingest"`` counts
#: messages read, ``"questions"`` questions asked.
Progress = Callable[[str, int, int], None]


def evaluate(
    data: EvalSet,
    config: ConfigLike = None,
    *,
    memory: Memory | None = None,
    ingest: bool = True,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    recall_at: Sequence[int] = DEFAULT_RECALL_AT,
    mode: SearchMode = "hybrid",
    message_k: int = MESSAGE_K,
    store_dir: str | os.PathLike[str] | None = None,
    miss_analysis: bool = False,
    on_progress: Progress | None = None,
) -> EvalResult:
    """Measure retrieval on ``data`` (see the module).

    Args:
        config: the reader config ``Memory(config)`` takes (a YAML path, a dict, a factory;
            ``None``: the defaults, the bundled local embedder).
        memory: a ``Memory`` to use instead of a fresh one (not closed here; ``config`` and
            ``store_dir`` must then be left out); ``ingest=False``: it already holds ``data``,
            as a store kept by an earlier run does, so nothing is read.
        budgets: the context budgets (tokens); recall_at: the ranks recall is measured at.
        mode: the search mode (``hybrid``, ``vector``, ``text``), for search and context.
        message_k: the hits message-level recall draws messages from (at least
            ``max(recall_at)``).
        store_dir: a folder to keep the store in (``eval.db``; it must not exist yet);
            ``None``: a temporary folder, removed afterwards.
        miss_analysis: search :data:`MISS_DEPTH` hits for each question not at rank 1.
        on_progress: called as work goes (:data:`Progress`).

    Raises:
        InputError: bad settings, no question to ask, a store file already in ``store_dir``.
        ConfigError, StoreError: as ``Memory`` raises them.
    """
    budgets, recall_at = _positive(budgets, "budgets"), _positive(recall_at, "recall_at")
    if mode not in SEARCH_MODES:
        raise InputError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    if message_k < max(recall_at):
        raise InputError(f"message_k ({message_k}) must be at least max(recall_at)")
    if not data.questions:
        raise InputError(f"{data.name}: no question to ask ({_left_out(data)})")
    if memory is not None and (config is not None or store_dir is not None):
        raise InputError("evaluate(): give memory= or config/store_dir, not both")
    settings = _Settings(budgets, recall_at, mode, message_k, miss_analysis, on_progress)
    if memory is not None:
        results = _measure(memory, data, settings, ingest=ingest)
        return EvalResult(data.name, mode, recall_at, budgets, message_k, results)
    with tempfile.TemporaryDirectory(prefix="memreader-eval-") as scratch:
        folder = Path(scratch if store_dir is None else store_dir)
        path = folder / STORE_FILE
        if path.exists():
            raise InputError(f"{path} exists: keep each run's store in a folder of its own")
        folder.mkdir(parents=True, exist_ok=True)
        from memreader.front import Memory

        with Memory(config, store=f"sqlite:///{path}") as fresh:
            results = _measure(fresh, data, settings, ingest=True)
        size = sum(p.stat().st_size for p in folder.glob(STORE_FILE + "*"))
    label = os.fspath(config) if isinstance(config, (str, os.PathLike)) else ""
    return EvalResult(data.name, mode, recall_at, budgets, message_k, results, size, label)


def _positive(values: Sequence[int], what: str) -> tuple[int, ...]:
    out = tuple(sorted(set(values)))
    if not out or not all(isinstance(v, int) and v > 0 for v in out):
        raise InputError(f"{what} must be whole numbers > 0, got {list(values)!r}")
    return out


def _left_out(data: EvalSet) -> str:
    convs = data.conversations
    return (
        f"{sum(c.unanswerable for c in convs)} without known evidence, "
        f"{sum(c.other_categories for c in convs)} of other categories"
    )


class _Settings:
    def __init__(
        self,
        budgets: tuple[int, ...],
        recall_at: tuple[int, ...],
        mode: SearchMode,
        message_k: int,
        miss_analysis: bool,
        on_progress: Progress | None,
    ) -> None:
        self.budgets, self.recall_at, self.mode = budgets, recall_at, mode
        self.message_k, self.miss_analysis = message_k, miss_analysis
        self.progress = on_progress or (lambda stage, done, total: None)


def _measure(
    memory: Memory, data: EvalSet, settings: _Settings, *, ingest: bool
) -> tuple[ConversationResult, ...]:
    read = _ingest(memory, data, settings) if ingest else {}
    _warm_up(memory, next(c for c in data.conversations if c.questions), settings)
    results, asked = [], 0
    for conv in data.conversations:
        questions = []
        for question in conv.questions:
            questions.append(_ask(memory, conv, question, settings))
            asked += 1
            settings.progress("questions", asked, data.questions)
        stored, seconds = read.get(conv.id, (None, None))
        results.append(
            ConversationResult(
                conv.id,
                len(conv.sessions),
                conv.messages,
                stored,
                seconds,
                tuple(questions),
                conv.unknown_evidence,
                conv.unanswerable,
                conv.other_categories,
            )
        )
    return tuple(results)


def _ingest(
    memory: Memory, data: EvalSet, settings: _Settings
) -> dict[str, tuple[int | None, float | None]]:
    """Each conversation read, session by session: the memories its adds stored, the seconds
    they took."""
    read: dict[str, tuple[int | None, float | None]] = {}
    done = 0
    for conv in data.conversations:
        started, stored = time.perf_counter(), 0
        for session in conv.sessions:
            messages = [m.as_message() for m in session.messages]
            added = memory.add(messages, user_id=conv.id, session_id=f"{conv.id}/{session.id}")
            stored += added.counts.get("ADD", 0)
            done += len(messages)
            settings.progress("ingest", done, data.messages)
        seconds = time.perf_counter() - started
        read[conv.id] = (stored, seconds)
        log.info(
            "%s: %d messages into %d memories in %.1f s", conv.id, conv.messages, stored, seconds
        )
    return read


def _warm_up(memory: Memory, conv: EvalConversation, settings: _Settings) -> None:
    """One search and one context call, untimed: the first call loads what later ones reuse."""
    query = conv.questions[0].question
    memory.search(query, user_id=conv.id, k=max(settings.recall_at), mode=settings.mode)
    memory.context(query, user_id=conv.id, max_tokens=settings.budgets[0], mode=settings.mode)


def _ask(
    memory: Memory, conv: EvalConversation, question: EvalQuestion, settings: _Settings
) -> QuestionResult:
    query, owner, mode = question.question, conv.id, settings.mode
    evidence = set(question.evidence)
    texts = [t for t in (normalise_text(conv.message(e).content) for e in question.evidence) if t]
    k = max(settings.recall_at)
    started = time.perf_counter()
    hits = memory.search(query, user_id=owner, k=k, mode=mode)
    search_ms = (time.perf_counter() - started) * 1000
    memory_rank = first_rank(cites(hit, evidence, texts) for hit in hits)
    wide = (
        hits
        if settings.message_k == k
        else memory.search(query, user_id=owner, k=settings.message_k, mode=mode)
    )
    named = ranked_messages(wide)
    message_rank = first_rank(
        matches(source.message_id, source.content, evidence, texts) for _, source in named
    )
    held: dict[int, bool] = {}
    context_ms = []
    for budget in settings.budgets:
        started = time.perf_counter()
        block = memory.context(query, user_id=owner, max_tokens=budget, mode=mode).text
        context_ms.append((time.perf_counter() - started) * 1000)
        held[budget] = holds(block, texts)
    deep_rank, deep = None, settings.miss_analysis and memory_rank != 1
    if deep:
        deep_hits = memory.search(query, user_id=owner, k=MISS_DEPTH, mode=mode)
        deep_rank = first_rank(cites(hit, evidence, texts) for hit in deep_hits)
    return QuestionResult(
        conv.id,
        question.id,
        query,
        question.category,
        question.evidence,
        memory_rank,
        message_rank,
        held,
        search_ms,
        tuple(context_ms),
        deep_rank,
        deep,
    )
