"""Evidence-labelled retrieval (issue 30): does ``search`` find, and does a prompt budget hold,
the messages that answer each question?

Every conversation of a set is read into a fresh store through the public API (``Memory(config)``
on a temporary SQLite file, one ``m.add(session, user_id=..., session_id=...)`` per session, fast
mode), then every question is asked of its conversation's owner:

- **recall@1/3/10** of ``m.search(question, user_id=..., k=K)``: a hit at k when one of the k best
  hits has a source citing an evidence message (its ``message_id``, which every message carries,
  or, failing that, a source whose text holds the whole evidence message);
- **context recall at 200, 500, 1,000 and 2,000 tokens**: the share of questions whose packed
  text holds an evidence message (its full text as a substring, whitespace collapsed). The text
  is ``m.context(question, user_id=..., max_tokens=B).text`` when ``Memory`` has ``context``
  (XML entities unescaped: the block escapes memory text);
  else the **baseline packer**: the top hits' whole memory texts in rank order (``search`` with
  k=50), joined by blank lines, counted in cl100k_base tokens, the last one cut at a token
  boundary so the block never exceeds B (what a caller does today). The table names the packer;
- **passage@1/3/k** (only when the store fills ``hit.passages``): as recall@k, but counting a
  hit only when its best passage (``hit.passages[0]``) holds an evidence message's source;
- **latency** p50/p95 of ``search`` and of ``context`` (per call), after a warm-up query.

The sets (``--sets``; see :mod:`evidence_data` and :mod:`evidence_multilingual` for what each
measures and its limits): ``synthetic-en`` (LoCoMo-like: two speakers, 16 dated sessions,
paraphrased questions, updates, dates, names), ``memorybank-en`` (real chats, keyword queries),
``memorybank-cn`` (real Chinese chats, title and clause lookups), ``synthetic-zh`` and
``synthetic-ja``. The held-out check is LoCoMo-like: synthetic-en is the closest stand-in.

Variants (each flag takes a comma list; every combination runs): ``--windows 1024/200,128/32``
(the reader's ``window.max_tokens/overlap_tokens``; ``default`` is the reader's default),
``--modes hybrid,vector,text``, ``--k 10``. ``--embedder hash`` (the test seam) or
``static`` swaps the default bundled local embedder.

Run by hand (about 5 minutes per window size on 2 busy cores, all five sets)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/evidence_retrieval.py \\
        --windows default,256/64,128/32 --json /tmp/evidence.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/evidence_retrieval.py --quick   # ~1 minute a size

A Markdown table goes to stdout, ``--json PATH`` writes every row (per-kind breakdowns too, and
``per_question``: each question's rank, budgets held, and for one not at rank 1 where its
evidence ranks among ``MISS_DEPTH`` hits, its passage score and the first hit's best passage).
``--stores DIR`` keeps each store file there and reuses it on the next run (to try ranking or
packing changes without reading the sets again; not for ingestion changes).
"""

from __future__ import annotations

import argparse
import html
import inspect
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from evidence_data import Dataset, synthetic_english  # noqa: E402
from evidence_multilingual import (  # noqa: E402
    memorybank_chinese,
    memorybank_english,
    synthetic_cjk,
)

log = logging.getLogger("evidence_retrieval")

BUDGETS = (200, 500, 1000, 2000)
RECALL_AT = (1, 3, 10)
MISS_DEPTH = 200  # hits searched for where a missed question's evidence ranks
PACK_K = 50  # hits the baseline packer draws from (2,000 tokens of 128-token windows is ~16)
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


def normalise(text: str) -> str:
    """``text`` with every run of whitespace one space, stripped (how containment is checked)."""
    return re.sub(r"\s+", " ", text).strip()


def best_passage_cites(hit: Any, evidence: set[str]) -> bool | None:
    """Whether a hit's best passage (``hit.passages[0]``) holds an evidence message's source;
    ``None`` when the hit has no passages (the store scored the memory whole)."""
    passages = getattr(hit, "passages", ())
    if not passages or passages[0].source_index is None:
        return None if not passages else False
    sources = hit.memory.item.metadata.sources
    index = passages[0].source_index
    return 0 <= index < len(sources) and sources[index].message_id in evidence


def cites(hit: Any, evidence: set[str], texts: Sequence[str]) -> bool:
    """Whether a search hit's sources cite an evidence message (by id, else by whole text)."""
    for source in hit.memory.item.metadata.sources:
        if source.message_id in evidence:
            return True
        content = normalise(source.content)
        if content and any(text in content for text in texts):
            return True
    return False


def baseline_pack(hits: Sequence[Any], max_tokens: int) -> str:
    """The top hits' memory texts in rank order, blank-line separated, within ``max_tokens``
    cl100k_base tokens; the last text that does not fit is cut at a token boundary (never
    inside a character).

    >>> baseline_pack([], 100)
    ''
    """
    from memreader.windowing.tokens import get_tokenizer

    tokenizer = get_tokenizer()
    block = ""
    for hit in hits:
        candidate = (block + "\n\n" if block else "") + hit.memory.item.memory
        if tokenizer.count(candidate) <= max_tokens:
            block = candidate
            continue
        tokens = tokenizer.encode(candidate)[:max_tokens]
        while tokens and not _clean_cut(tokenizer, tokens):
            tokens.pop()
        block = tokenizer.decode(tokens)
        break
    return block


def _clean_cut(tokenizer: Any, tokens: list[int]) -> bool:
    text = tokenizer.decode(tokens)
    return "\ufffd" not in text[-2:]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` (nearest rank); 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _packer(memory: Any, mode: str) -> tuple[str, Callable[[str, str, Sequence[int]], list[Any]]]:
    """The packer to use and a function (query, user, budgets) -> [(text, ms)] per budget:
    ``Memory.context`` when it exists (one call per budget, given ``mode`` when it takes one),
    else the baseline (one ``search`` for all budgets; each budget's time is that search's
    plus its own packing)."""
    context = getattr(memory, "context", None)
    if context is None:

        def baseline(query: str, user: str, budgets: Sequence[int]) -> list[Any]:
            t0 = time.perf_counter()
            hits = memory.search(query, user_id=user, k=PACK_K, mode=mode)
            search_s = time.perf_counter() - t0
            out = []
            for budget in budgets:
                t0 = time.perf_counter()
                text = baseline_pack(hits, budget)
                out.append((text, (search_s + time.perf_counter() - t0) * 1000))
            return out

        return f"baseline (top-{PACK_K} whole memories)", baseline
    parameters = inspect.signature(context).parameters.values()
    takes_mode = any(p.name == "mode" or p.kind is p.VAR_KEYWORD for p in parameters)
    extra = {"mode": mode} if takes_mode else {}

    def call(query: str, user: str, budgets: Sequence[int]) -> list[Any]:
        out = []
        for budget in budgets:
            t0 = time.perf_counter()
            # The block escapes memory text as XML character data (&amp; &lt; &gt;).
            text = html.unescape(str(context(query, user_id=user, max_tokens=budget, **extra).text))
            out.append((text, (time.perf_counter() - t0) * 1000))
        return out

    return "Memory.context" + ("" if takes_mode or mode == "hybrid" else " (its own mode)"), call


def run(
    data: Dataset,
    variant: Variant,
    budgets: Sequence[int] = BUDGETS,
    *,
    stores: Path | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Read ``data`` into a fresh store with ``variant`` and score every question (a row).
    ``stores``: a folder that keeps the store files (one per set, seed and variant) and reuses
    one already there instead of reading the set again: for trying ranking and packing
    changes, not ingestion changes (a kept file holds what the code of its first run wrote)."""
    from memreader import Memory

    with tempfile.TemporaryDirectory(prefix="evidence-") as folder:
        path = Path(folder) / "memories.db"
        if stores is not None:
            stores.mkdir(parents=True, exist_ok=True)
            name = f"{data.name}-seed{seed}-{variant.label}-{len(data.questions)}q"
            path = stores / (re.sub(r"[^\w.-]+", "_", name) + ".db")
        reuse = path.exists()
        memory = Memory(variant.config(), store=f"sqlite:///{path}")
        try:
            started = time.perf_counter()
            stored = 0
            for conv in data.conversations if not reuse else ():
                for s, session in enumerate(conv.sessions):
                    result = memory.add(
                        list(session), user_id=conv.user_id, session_id=f"{conv.conv_id}/s{s}"
                    )
                    stored += result.counts.get("ADD", 0)
            ingest_s = time.perf_counter() - started
            return _score(data, variant, memory, budgets) | {
                "memories": stored if not reuse else "reused",
                "ingest_s": round(ingest_s, 2) if not reuse else "",
            }
        finally:
            memory.close()


def _score(data: Dataset, variant: Variant, memory: Any, budgets: Sequence[int]) -> dict[str, Any]:
    owners = {conv.conv_id: conv.user_id for conv in data.conversations}
    packer, pack = _packer(memory, variant.mode)
    first = data.questions[0]
    memory.search(first.text, user_id=owners[first.conv_id], k=variant.k, mode=variant.mode)
    search_ms: list[float] = []
    context_ms: list[float] = []
    per_question: list[dict[str, Any]] = []
    passage_ranks: list[int | None] = []  # only when the store fills hit.passages
    for q in data.questions:
        user = owners[q.conv_id]
        evidence = set(q.evidence)
        texts = [normalise(data.message(e)["content"]) for e in q.evidence]
        t0 = time.perf_counter()
        hits = memory.search(q.text, user_id=user, k=variant.k, mode=variant.mode)
        search_ms.append((time.perf_counter() - t0) * 1000)
        rank = next((i + 1 for i, h in enumerate(hits) if cites(h, evidence, texts)), None)
        scored = [best_passage_cites(h, evidence) for h in hits]
        if any(x is not None for x in scored):
            passage_rank = next((i + 1 for i, x in enumerate(scored) if x), None)
            passage_ranks.append(passage_rank)
        held = {}
        for budget, (block, ms) in zip(budgets, pack(q.text, user, budgets), strict=True):
            context_ms.append(ms)
            held[budget] = any(text in normalise(block) for text in texts)
        per_question.append(
            {"q": q.text, "kind": q.kind, "rank": rank, "held": held, "evidence": list(q.evidence)}
            | _miss(memory, q.text, user, variant, evidence, texts, rank)
        )
    row: dict[str, Any] = {
        "set": data.name,
        "lang": data.lang,
        "variant": variant.label,
        "packer": packer,
        "questions": len(data.questions),
        "owners": len(data.conversations),
    }
    row.update(_rates(per_question, variant.k, budgets))
    if passage_ranks:  # a hit at k: one of the k best hits' best passage is evidence
        for at in (1, 3, variant.k):
            found = sum(r is not None and r <= at for r in passage_ranks)
            row[f"passage@{at}"] = round(found / len(data.questions), 3)
    row["search_p50_ms"] = round(statistics.median(search_ms), 1)
    row["search_p95_ms"] = round(percentile(search_ms, 0.95), 1)
    row["context_p50_ms"] = round(statistics.median(context_ms), 1)
    row["context_p95_ms"] = round(percentile(context_ms, 0.95), 1)
    kinds = sorted({r["kind"] for r in per_question})
    row["by_kind"] = {
        kind: {"questions": sum(r["kind"] == kind for r in per_question)}
        | _rates([r for r in per_question if r["kind"] == kind], variant.k, budgets)
        for kind in kinds
    }
    row["missed"] = [r["q"] for r in per_question if r["rank"] is None]
    # As JSON reads it back (budgets as string keys), so the --json file equals the rows.
    row["per_question"] = [
        r | {"held": {str(b): v for b, v in r["held"].items()}} for r in per_question
    ]
    return row


def _miss(
    memory: Any,
    query: str,
    user: str,
    variant: Variant,
    evidence: set[str],
    texts: Sequence[str],
    rank: int | None,
) -> dict[str, Any]:
    """Where a question's evidence ranks when it is not first (``--json`` rows): its rank among
    ``MISS_DEPTH`` hits (``None``: not among them, so the candidate lists never reached it),
    its own relevance and passage score against the first hit's, and the first hit's best
    passage text (what beat it)."""
    if rank == 1:
        return {}
    hits = memory.search(query, user_id=user, k=MISS_DEPTH, mode=variant.mode)
    deep = next((i for i, h in enumerate(hits) if cites(h, evidence, texts)), None)
    out: dict[str, Any] = {"deep_rank": None if deep is None else deep + 1}
    if hits:
        top = hits[0]
        out["top_relevance"] = round(top.score.relevance, 3)
        if top.passages:
            best = top.passages[0]
            out["top_passage"] = top.memory.item.memory[best.start : best.end][:160]
    if deep is not None:
        hit = hits[deep]
        out["evidence_relevance"] = round(hit.score.relevance, 3)
        sources = hit.memory.item.metadata.sources
        for p in hit.passages:
            if p.source_index is not None and sources[p.source_index].message_id in evidence:
                out["evidence_passage_score"] = round(p.score, 3)
                break
    return out


def _rates(rows: list[dict[str, Any]], k: int, budgets: Sequence[int]) -> dict[str, float]:
    n = max(1, len(rows))
    out = {}
    for at in (*[a for a in RECALL_AT if a < k], k):
        out[f"recall@{at}"] = round(
            sum(r["rank"] is not None and r["rank"] <= at for r in rows) / n, 3
        )
    for budget in budgets:
        out[f"ctx@{budget}"] = round(sum(r["held"][budget] for r in rows) / n, 3)
    return out


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""

    def keys(prefix: str) -> list[str]:
        found = {key for row in rows for key in row if key.startswith(prefix)}
        return sorted(found, key=lambda key: int(key.split("@")[1]))

    recall, passage, ctx = keys("recall@"), keys("passage@"), keys("ctx@")
    columns = [
        "set",
        "variant",
        "questions",
        "owners",
        "memories",
        *recall,
        *passage,
        *ctx,
        "search_p50_ms",
        "search_p95_ms",
        "context_p50_ms",
        "context_p95_ms",
        "ingest_s",
        "packer",
    ]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
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
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--windows", default="default", help="e.g. default,256/64,128/32")
    parser.add_argument("--modes", default="hybrid", help="hybrid,vector,text")
    parser.add_argument("--k", default="10")
    parser.add_argument("--embedder", default=None, help="hash or static (default: Memory()'s)")
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
    # The embed step warns on every add() of CJK text to an English-only model: say it once.
    logging.getLogger("memreader.steps.embed").addFilter(_Once())
    sets = [
        make_set(name, seed=args.seed, quick=args.quick, tiny=args.tiny)
        for name in args.sets.split(",")
    ]
    rows = []
    for window in _windows(args.windows):
        for mode in args.modes.split(","):
            for k in (int(x) for x in args.k.split(",")):
                variant = Variant(window, mode, k, args.embedder)
                for data in sets:
                    row = run(data, variant, stores=args.stores, seed=args.seed)
                    hidden = ("by_kind", "missed", "per_question")
                    brief = {key: v for key, v in row.items() if key not in hidden}
                    log.info("%s", json.dumps(brief, ensure_ascii=False))
                    rows.append(row)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
