"""Evidence-labelled retrieval (issues 30 and 40): does ``search`` find, and does a prompt
budget hold, the messages that answer each question? The measuring is
:mod:`memreader.evaluation`'s (what ``memreader eval FILE`` runs); this script runs it over its
own sets, a user's file, and several configs, and measures a simple baseline beside it.

Every conversation of a set is read into a fresh store through the public API (``Memory(config)``
on a SQLite file, one ``m.add(session, user_id=conv, session_id=...)`` per session, fast mode),
then every question is asked of its conversation's owner:

- **recall@1/3/10** (memory level) of ``m.search(question, user_id=..., k=K)``: one of the k
  best hits has a source citing an evidence message (its ``message_id``, or a source whose text
  holds the whole evidence message);
- **msg@1/3/10** (message level): an evidence message among the first k of the messages the
  passages of the 50 best hits name, best passage first (a hit is a window of ~15 messages, so
  recall@k flatters memreader against systems returning single messages; this replaces the
  earlier ``passage@k``);
- **context recall at 200, 500, 1,000 and 2,000 tokens**: the share of questions whose
  ``m.context(question, user_id=..., max_tokens=B).text`` holds an evidence message (its full
  text as a substring, XML entities unescaped, whitespace collapsed);
- **latency** p50/p95 of ``search`` and of ``context`` (per call), after a warm-up query.

Beside each set, the **baseline** (:mod:`evidence_baselines`): BM25 + MiniLM over single
messages, reciprocal-rank fused, packed whole as ``Name: content`` lines; its rows have
``msg@k`` and ``ctx@B`` (no memories, so no memory-level recall). ``--no-baseline`` skips it;
``--embedder`` swaps its embedder too.

The sets (``--sets``; see :mod:`evidence_data` and :mod:`evidence_multilingual` for what each
measures and its limits): ``synthetic-en`` (LoCoMo-like: two speakers, 16 dated sessions,
paraphrased questions, updates, dates, names), ``memorybank-en`` (real chats, keyword queries),
``memorybank-cn`` (real Chinese chats, title and clause lookups), ``synthetic-zh`` and
``synthetic-ja``. ``--eval-file PATH`` adds a file in LoCoMo's shape or the simple one
(``--no-names``: without the speakers' names), e.g. LoCoMo itself (``data/locomo10.json`` of
github.com/snap-research/LoCoMo; with ``--eval-file`` alone, only it is measured)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/evidence_retrieval.py --eval-file locomo10.json

Variants (each flag takes a comma list; every combination runs): ``--windows 1024/200,128/32``
(the reader's ``window.max_tokens/overlap_tokens``; ``default`` is the reader's default),
``--modes hybrid,vector,text``, ``--k 10``. ``--embedder hash`` (the test seam) or
``static`` swaps the default bundled local embedder.

Run by hand (about 5 minutes per window size on 2 busy cores, all five sets)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/evidence_retrieval.py \\
        --windows default,256/64,128/32 --json /tmp/evidence.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/evidence_retrieval.py --quick   # ~1 minute a size

A Markdown table goes to stdout, ``--json PATH`` writes every row (per-kind breakdowns too, and
``per_question``: each question's ``memory_rank``, ``message_rank``, budgets held, and for one
not at rank 1, ``deep_rank``: where its evidence ranks among 200 hits).
``--stores DIR`` keeps each store file there and reuses it on the next run (to try ranking or
packing changes without reading the sets again; not for ingestion changes).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from evidence_baselines import LABEL, baseline  # noqa: E402
from evidence_data import Dataset, synthetic_english  # noqa: E402
from evidence_multilingual import (  # noqa: E402
    memorybank_chinese,
    memorybank_english,
    synthetic_cjk,
)

from memreader.evaluation import (  # noqa: E402
    EvalConversation,
    EvalMessage,
    EvalQuestion,
    EvalResult,
    EvalSession,
    EvalSet,
    cites,
    load_eval_file,
)

__all__ = ["cites", "eval_set", "main", "make_set", "row_of", "run", "table"]

log = logging.getLogger("evidence_retrieval")

BUDGETS = (200, 500, 1000, 2000)
RECALL_AT = (1, 3, 10)
SETS = ("synthetic-en", "memorybank-en", "memorybank-cn", "synthetic-zh", "synthetic-ja")


def make_set(name: str, *, seed: int = 0, quick: bool = False, tiny: bool = False) -> Dataset:
    """The named set (see the module); ``quick``/``tiny`` shrink it (MemoryBank: 3/1 users)."""
    users = 1 if tiny else 3 if quick else None
    if name == "synthetic-en":
        return synthetic_english(seed=seed, quick=quick, tiny=tiny)
    if name == "memorybank-en":
        return memorybank_english(users=users)
    if name == "memorybank-cn":
        return memorybank_chinese(users=users)
    if name in ("synthetic-zh", "synthetic-ja"):
        return synthetic_cjk(name[-2:], seed=seed, quick=quick, tiny=tiny)
    raise SystemExit(f"unknown set {name!r}; known: {', '.join(SETS)}")


@dataclass(frozen=True)
class Variant:
    """One config to measure: the window (``None``: the reader's default), search mode, k."""

    window: tuple[int, int] | None = None
    mode: str = "hybrid"
    k: int = 10
    embedder: str | None = None  # None: Memory()'s default (the bundled local model)

    @property
    def label(self) -> str:
        window = "default" if self.window is None else f"{self.window[0]}/{self.window[1]}"
        return f"window {window}, {self.mode}, k={self.k}"

    def config(self) -> dict[str, Any]:
        inner: dict[str, Any] = {}
        if self.window is not None:
            inner["window"] = {"max_tokens": self.window[0], "overlap_tokens": self.window[1]}
        if self.embedder is not None:
            inner["embedder"] = {"backend": self.embedder}
        return {"config": inner}


def eval_set(data: Dataset) -> EvalSet:
    """``data`` as :mod:`memreader.evaluation` measures it: each conversation one owner (its
    ``conv_id``), each session ``s<i>``, each question's ``kind`` its category."""
    convs = []
    for conv in data.conversations:
        sessions = tuple(
            EvalSession(
                f"s{i}",
                tuple(
                    EvalMessage(
                        m["message_id"], m["role"], m["content"], m.get("name"), m.get("chat_time")
                    )
                    for m in session
                ),
            )
            for i, session in enumerate(conv.sessions)
        )
        asked = [q for q in data.questions if q.conv_id == conv.conv_id]
        questions = tuple(
            EvalQuestion(f"{conv.conv_id}#q{n}", q.text, q.evidence, q.answer, q.kind)
            for n, q in enumerate(asked, 1)
        )
        convs.append(EvalConversation(conv.conv_id, sessions, questions))
    return EvalSet(data.name, tuple(convs))


def run(
    data: EvalSet,
    variant: Variant,
    budgets: Sequence[int] = BUDGETS,
    *,
    stores: Path | None = None,
    seed: int = 0,
    lang: str = "",
) -> dict[str, Any]:
    """Read ``data`` into a fresh store with ``variant`` and score every question with
    :func:`memreader.evaluation.evaluate` (a row). ``stores``: a folder that keeps the store
    files (one per set, seed and variant) and reuses one already there instead of reading the
    set again: for trying ranking and packing changes, not ingestion changes (a kept file holds
    what the code of its first run wrote)."""
    from memreader import Memory
    from memreader.evaluation import evaluate

    with tempfile.TemporaryDirectory(prefix="evidence-") as folder:
        path = Path(folder) / "memories.db"
        if stores is not None:
            stores.mkdir(parents=True, exist_ok=True)
            name = f"{data.name}-seed{seed}-{variant.label}-{data.questions}q"
            path = stores / (re.sub(r"[^\w.-]+", "_", name) + ".db")
        reuse = path.exists()
        with Memory(variant.config(), store=f"sqlite:///{path}") as memory:
            result = evaluate(
                data,
                memory=memory,
                ingest=not reuse,
                budgets=budgets,
                recall_at=sorted({*(a for a in RECALL_AT if a < variant.k), variant.k}),
                mode=variant.mode,
                miss_analysis=True,
            )
        size = path.stat().st_size
    row = row_of(result, data, variant.label, "Memory.context", lang=lang)
    if reuse:
        row["memories"], row["ingest_s"] = "reused", ""
    row["bytes_per_message"] = round(size / max(1, data.messages))
    return row


def row_of(
    result: EvalResult, data: EvalSet, variant: str, packer: str, *, lang: str = ""
) -> dict[str, Any]:
    """A table row of ``result``: the pooled rates (``recall@k``, ``msg@k``, ``ctx@B``),
    latencies, and for ``--json`` the rates by kind, the questions missed and each question
    (``memory_rank``, ``message_rank``, ``held`` per budget, ``deep_rank`` for one not at rank
    1)."""
    memories = [c.memories for c in result.conversations]
    seconds = [c.ingest_s for c in result.conversations]
    row: dict[str, Any] = {
        "set": data.name,
        "lang": lang,
        "variant": variant,
        "packer": packer,
        "owners": len(data.conversations),
        "memories": "" if None in memories else sum(m or 0 for m in memories),
    }
    row |= result.pooled().columns() | result.latency().columns()
    row["ingest_s"] = "" if None in seconds else round(sum(s or 0.0 for s in seconds), 2)
    row["by_kind"] = {kind: s.columns() for kind, s in result.by_category().items()}
    row["missed"] = [q.question for q in result.questions if q.memory_rank is None]
    row["per_question"] = [q.to_dict() for q in result.questions]
    return row


def baseline_row(data: EvalSet, embedder_name: str | None, lang: str = "") -> dict[str, Any]:
    """The simple baseline's row on ``data`` (:mod:`evidence_baselines`): message-level rates
    only (it has no memories, so no ``recall@k``)."""
    from memreader.embedders.base import build_embedder

    backend = embedder_name or "local"
    embedder = build_embedder({"backend": backend})
    try:
        result = baseline(data, BUDGETS, RECALL_AT, embedder)
    finally:
        close = getattr(embedder, "close", None)
        if callable(close):
            close()
    name = "MiniLM" if backend == "local" else backend
    row = row_of(result, data, LABEL.format(embedder=name), "baseline: whole lines", lang=lang)
    for key in [key for key in row if key.startswith("recall@")]:
        del row[key]
    row["memories"] = ""
    return row


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""

    def keys(prefix: str) -> list[str]:
        found = {key for row in rows for key in row if key.startswith(prefix)}
        return sorted(found, key=lambda key: int(key.split("@")[1]))

    columns = [
        "set",
        "variant",
        "questions",
        "owners",
        "memories",
        *keys("recall@"),
        *keys("msg@"),
        *keys("ctx@"),
        "search_p50_ms",
        "search_p95_ms",
        "context_p50_ms",
        "context_p95_ms",
        "ingest_s",
        "packer",
    ]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = ("" if row.get(c) is None else str(row.get(c, "")) for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _windows(text: str) -> list[tuple[int, int] | None]:
    out: list[tuple[int, int] | None] = []
    for part in text.split(","):
        if part == "default":
            out.append(None)
        else:
            size, _, overlap = part.partition("/")
            out.append((int(size), int(overlap or int(size) // 4)))
    return out


class _Once(logging.Filter):
    """Lets each message template through once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        new = str(record.msg) not in self.seen
        self.seen.add(str(record.msg))
        return new


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets", default=None, help=f"default: {','.join(SETS)} (none with --eval-file)"
    )
    parser.add_argument(
        "--eval-file", type=Path, default=None, help="a LoCoMo-shaped or simple file"
    )
    parser.add_argument("--no-names", dest="names", action="store_false", help="with --eval-file")
    parser.add_argument("--windows", default="default", help="e.g. default,256/64,128/32")
    parser.add_argument("--modes", default="hybrid", help="hybrid,vector,text")
    parser.add_argument("--k", default="10")
    parser.add_argument("--embedder", default=None, help="hash or static (default: Memory()'s)")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small sets (about a minute)")
    parser.add_argument("--tiny", action="store_true", help="the smallest sets (tests)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--stores",
        type=Path,
        default=None,
        help="keep the stores here and reuse them (ranking changes only, not ingestion)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    # The embed step warns once per reader, and a run makes a reader per set: say it once a
    # run (and take the filter off after: the tests run main() inside their own process).
    embed_log, once = logging.getLogger("memreader.steps.embed"), _Once()
    embed_log.addFilter(once)
    try:
        return _evaluate(args)
    finally:
        embed_log.removeFilter(once)


def _evaluate(args: argparse.Namespace) -> list[dict[str, Any]]:
    names = args.sets.split(",") if args.sets else [] if args.eval_file else list(SETS)
    sets: list[tuple[EvalSet, str]] = []
    for name in names:
        made = make_set(name, seed=args.seed, quick=args.quick, tiny=args.tiny)
        sets.append((eval_set(made), made.lang))
    if args.eval_file is not None:
        sets.append((load_eval_file(args.eval_file, names=args.names), ""))
    rows = []
    for window in _windows(args.windows):
        for mode in args.modes.split(","):
            for k in (int(x) for x in args.k.split(",")):
                variant = Variant(window, mode, k, args.embedder)
                for data, lang in sets:
                    rows.append(
                        _said(run(data, variant, stores=args.stores, seed=args.seed, lang=lang))
                    )
    if args.baseline:
        rows += [_said(baseline_row(data, args.embedder, lang)) for data, lang in sets]
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    return rows


def _said(row: dict[str, Any]) -> dict[str, Any]:
    """``row``, logged without its long parts."""
    hidden = ("by_kind", "missed", "per_question")
    log.info(
        "%s", json.dumps({k: v for k, v in row.items() if k not in hidden}, ensure_ascii=False)
    )
    return row


if __name__ == "__main__":
    main()
