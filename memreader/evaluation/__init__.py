"""Retrieval measured on your own data, offline: ``memreader eval FILE`` and its library.

A file of conversations whose messages carry ids and of questions naming the messages that
answer them (LoCoMo's ``data/locomo10.json``, or the simple shape: :mod:`.load`) is read into
a fresh store through :class:`~memreader.Memory`, and every question is asked of its
conversation: recall@k of ``search`` (memory level and message level) and whether
``context()`` holds the evidence at each token budget (:mod:`.run`), with latencies; no LLM,
no judge, no download. Reported per conversation and pooled (:mod:`.report`)::

    from memreader.evaluation import evaluate, load_eval_file, report

    data = load_eval_file("locomo10.json")            # categories 1-4, speakers' names kept
    result = evaluate(data, "configs/my_reader.yaml")  # or None: the defaults
    tables = report(result)                             # Markdown: per conversation, pooled
    result.pooled().recall[10], result.pooled().context[500]

The modules: :mod:`.data` (the types), :mod:`.load` with :mod:`.locomo` and :mod:`.simple`
(the two shapes), :mod:`.questions` (evidence resolved, what was left out counted),
:mod:`.matching` (what counts as found), :mod:`.run` (the runner), :mod:`.results` (results,
rates, JSON form), :mod:`.report` (tables).
"""

from memreader.evaluation.data import (
    Category,
    EvalConversation,
    EvalMessage,
    EvalQuestion,
    EvalSession,
    EvalSet,
    normalise_dia_ids,
    normalise_text,
)
from memreader.evaluation.load import MAX_EVAL_FILE_BYTES, load_eval_file, parse_eval_data
from memreader.evaluation.locomo import LOCOMO_CATEGORIES
from memreader.evaluation.matching import cites, holds, ranked_messages
from memreader.evaluation.report import (
    category_table,
    conversation_table,
    notes,
    report,
    to_json,
)
from memreader.evaluation.results import (
    ConversationResult,
    EvalResult,
    Latency,
    QuestionResult,
    Scores,
)
from memreader.evaluation.run import (
    DEFAULT_BUDGETS,
    DEFAULT_RECALL_AT,
    MESSAGE_K,
    MISS_DEPTH,
    Progress,
    evaluate,
)

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_RECALL_AT",
    "LOCOMO_CATEGORIES",
    "MAX_EVAL_FILE_BYTES",
    "MESSAGE_K",
    "MISS_DEPTH",
    "Category",
    "ConversationResult",
    "EvalConversation",
    "EvalMessage",
    "EvalQuestion",
    "EvalResult",
    "EvalSession",
    "EvalSet",
    "Latency",
    "Progress",
    "QuestionResult",
    "Scores",
    "category_table",
    "cites",
    "conversation_table",
    "evaluate",
    "holds",
    "load_eval_file",
    "normalise_dia_ids",
    "normalise_text",
    "notes",
    "parse_eval_data",
    "ranked_messages",
    "report",
    "to_json",
]
