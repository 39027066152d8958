"""Ranking with and without heat (issue 34, part 1): does recorded use help a question whose
answer was used before, and how much does it cost one whose answer was not?

The synthetic evidence set (:mod:`evidence_data`, LoCoMo-like: 132 questions over 6 owners'
16 dated sessions; ``--quick`` 2 owners) is read into a fresh store through ``Memory`` (fast
mode, the bundled local embedder), as ``benchmarks/evidence_retrieval.py`` reads it. Then each
owner's questions are split in two halves (seeded): **used** questions, whose evidence memories
were handed to the agent before (``mark_used`` 3 times, the last a day before the search), and
**cold** ones, whose evidence was never used. Three histories of use:

- ``none``: nothing recorded; heat must change nothing at any weight (checked: the ranks are
  the same as at weight 0);
- ``evidence``: the used half's evidence memories used, nothing else;
- ``adversarial``: that, and for every cold question its best non-evidence hit at weight 0
  used 20 times (a distractor hot right where it competes: the worst case for heat).

For each history and heat weight (``--weights``, default 0, 0.05, 0.1, 0.2, 0.5), every
question is searched (``k=10``, hybrid) and recall@1/3/10 reported for the used half, the cold
half and all (a hit counts when one of its sources cites an evidence message, as in
evidence_retrieval.py). A Markdown table goes to stdout; ``--json PATH`` writes the rows::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/heat.py            # ~3 minutes on 2 cores
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/heat.py --quick    # ~1 minute
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from evidence_data import Dataset, Question  # noqa: E402
from evidence_retrieval import Variant, make_set  # noqa: E402

from memreader.evaluation import cites  # noqa: E402
from memreader.evaluation import normalise_text as normalise  # noqa: E402

log = logging.getLogger("heat")

WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.5)
HISTORIES = ("none", "evidence", "adversarial")
RECALL_AT = (1, 3, 10)
K = 10
#: Uses of a used question's evidence memories, and of a hot distractor.
EVIDENCE_USES = 3
DISTRACTOR_USES = 20


def _sources_by_memory(path: str) -> dict[tuple[str, str], set[str]]:
    """(owner, memory id) -> the message ids its sources cite, read from the store file (a
    benchmark may look inside; the library's API has no "all memories" call)."""
    found: dict[tuple[str, str], set[str]] = {}
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT user_id, id, item FROM memories WHERE status = 'active'")
        for owner, memory_id, item in rows:
            sources = json.loads(item)["metadata"].get("sources") or []
            found[(owner, memory_id)] = {s.get("message_id") for s in sources} - {None}
    return found


def _rank(memory: Any, data: Dataset, q: Question, user: str, weight: float) -> int | None:
    hits = memory.search(q.text, user_id=user, k=K, heat_weight=weight)
    texts = [normalise(data.message(e)["content"]) for e in q.evidence]
    return next((i + 1 for i, h in enumerate(hits) if cites(h, set(q.evidence), texts)), None)


def _recall(ranks: Sequence[int | None]) -> dict[str, float]:
    n = max(1, len(ranks))
    return {
        f"@{at}": round(sum(r is not None and r <= at for r in ranks) / n, 3) for at in RECALL_AT
    }


def run(
    data: Dataset, weights: Sequence[float], seed: int, embedder: str | None = None
) -> list[dict[str, Any]]:
    """Read ``data`` once into a store (``embedder``: a backend name, ``None`` for the default
    local model), then, on a copy per history, rank every question at each weight; one row
    per (history, weight)."""
    from memreader import Memory

    owners = {conv.conv_id: conv.user_id for conv in data.conversations}
    chooser = random.Random(seed)
    used = {q.text for q in data.questions if chooser.random() < 0.5}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="heat-") as folder:
        read = f"{folder}/read.db"
        with Memory(Variant(embedder=embedder).config(), store=f"sqlite:///{read}") as memory:
            for conv in data.conversations:
                for s, session in enumerate(conv.sessions):
                    session_id = f"{conv.conv_id}/s{s}"
                    memory.add(list(session), user_id=conv.user_id, session_id=session_id)
        for history in HISTORIES:  # each on a copy of the store as read, no use recorded
            path = f"{folder}/{history}.db"
            shutil.copyfile(read, path)
            with Memory(Variant(embedder=embedder).config(), store=f"sqlite:///{path}") as memory:
                rows += _weigh(memory, data, history, used, owners, path, weights)
    return rows


def _weigh(
    memory: Any,
    data: Dataset,
    history: str,
    used: set[str],
    owners: dict[str, str],
    path: str,
    weights: Sequence[float],
) -> list[dict[str, Any]]:
    """Record ``history``'s use, then rank every question at each weight."""
    base = {q.text: _rank(memory, data, q, owners[q.conv_id], 0.0) for q in data.questions}
    _record(memory, data, history, used, owners, path)
    rows = []
    for weight in weights:
        ranks = {q.text: _rank(memory, data, q, owners[q.conv_id], weight) for q in data.questions}
        if history == "none":
            assert ranks == base, "heat changed a ranking with no use recorded"
        row: dict[str, Any] = {"history": history, "heat_weight": weight}
        row["used"] = _recall([ranks[t] for t in ranks if t in used])
        row["cold"] = _recall([ranks[t] for t in ranks if t not in used])
        row["all"] = _recall(list(ranks.values()))
        log.info("%s", json.dumps(row))
        rows.append(row)
    return rows


def _record(
    memory: Any, data: Dataset, history: str, used: set[str], owners: dict[str, str], path: str
) -> None:
    """Mark the use ``history`` names (see the module docstring)."""
    if history == "none":
        return
    before = datetime.now(timezone.utc) - timedelta(days=1)
    cited = _sources_by_memory(path)
    for q in data.questions:
        user = owners[q.conv_id]
        if q.text in used:
            ids = [m for (o, m), msgs in cited.items() if o == user and msgs & set(q.evidence)]
            for _ in range(EVIDENCE_USES):
                memory.store.mark_used(ids, user_id=user, at=before)
        elif history == "adversarial":
            texts = [normalise(data.message(e)["content"]) for e in q.evidence]
            hits = memory.search(q.text, user_id=user, k=K, heat_weight=0.0)
            other = next((h.id for h in hits if not cites(h, set(q.evidence), texts)), None)
            for _ in range(DISTRACTOR_USES if other else 0):
                memory.store.mark_used([other], user_id=user, at=before)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as Markdown: recall@1/3/10 of the used half, the cold half and all."""
    head = "| history | heat_weight | used @1/@3/@10 | cold @1/@3/@10 | all @1/@3/@10 |"
    lines = [head, "|---|---|---|---|---|"]
    for row in rows:
        cells = [
            "/".join(f"{row[part][f'@{at}']:.3f}" for at in RECALL_AT)
            for part in ("used", "cold", "all")
        ]
        lines.append(f"| {row['history']} | {row['heat_weight']:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default=",".join(f"{w:g}" for w in WEIGHTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 owners (about a minute)")
    parser.add_argument("--tiny", action="store_true", help="the smallest set (tests)")
    parser.add_argument("--embedder", default=None, help="hash (tests); default: the local one")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    data = make_set("synthetic-en", seed=args.seed, quick=args.quick, tiny=args.tiny)
    rows = run(data, [float(w) for w in args.weights.split(",")], args.seed, args.embedder)
    sys.stdout.write(table(rows) + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
