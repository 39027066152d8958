"""Fast mode's category threshold, measured: precision, recall and F1 of the ``categorize``
step's similarity rule against hand labels, for a sweep of thresholds.

Run by hand (not in the test suite)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/categories.py

Options: ``--labels benchmarks/data/category_labels.jsonl``, ``--from 0.10 --to 0.50 --step
0.025``, ``--max-per-item 3``, ``--precision int8|fp32`` (the local embedder's),
``--json FILE`` (everything measured). Markdown goes to stdout
(paste it into RESULTS.md).

The labels: 120 user messages of MemoryBank English (``memory_bank_en.json``; messages of six
words or more, ``random.seed(21)`` sample), each labelled by hand with the default categories it
belongs to (several allowed; ``other`` when none fits). Each message is read as a one-message
chat by a fast-mode ``SimpleStructMemReader`` with the default (local, int8) embedder, so the
vector is the one the step sees (``user: ...``); the cosines to the categories' description
vectors come from the step's own index and the assignment from its own
:func:`~memreader.categories.assign.pick_categories`.

Scores are micro-averaged over (item, category) pairs, ``other`` included (an item rightly sent
to the catch-all is a true positive); ``to other`` is the share of items sent to the catch-all
(the labels send ``labelled other`` of them there).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fast_mode import machine_info  # a sibling script, on the path just above

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.categories.assign import pick_categories
from memreader.steps.categorize import CATEGORY_INDEX

LABELS = Path(__file__).resolve().parent / "data" / "category_labels.jsonl"


def load(path: Path) -> list[tuple[str, set[str]]]:
    """The labelled texts."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(row["text"], set(row["categories"])) for row in rows]


def cosines(texts: list[str], precision: str) -> tuple[tuple[str, ...], list[list[float]]]:
    """The category names and each text's cosines to them, as the step computes them, with the
    local embedder in ``precision`` (int8, the default; fp32, what a CPU whose int8 kernels
    fail the build-time check runs)."""
    embedder = {"backend": "local", "config": {"precision": precision}}
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=embedder))
    scenes = [[{"role": "user", "content": text}] for text in texts]
    result = reader.get_memory(scenes, type="chat", info={"user_id": "u", "session_id": "s"})
    index = reader.runtime.shared(CATEGORY_INDEX)
    rows = []
    for items in result:
        [item] = items
        assert item.metadata.embedding is not None
        scores = index.cosines(item.metadata.embedding)
        assert scores is not None
        rows.append(scores.tolist())
    return index.names, rows


def score(
    labels: list[set[str]], picked: list[list[str]], names: tuple[str, ...]
) -> dict[str, Any]:
    """Micro precision, recall, F1, the catch-all share, and per-category recall/precision."""
    tp = fp = fn = 0
    per: dict[str, Counter[str]] = {n: Counter() for n in (*names, "other")}
    for gold, got in zip(labels, picked, strict=True):
        for name in set(got) | gold:
            hit = name in gold and name in got
            tp, fp, fn = tp + hit, fp + (name in got and not hit), fn + (name in gold and not hit)
            per[name].update(tp=hit, fp=name in got and not hit, fn=name in gold and not hit)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    other = sum(1 for got in picked if got == ["other"]) / len(picked)
    return {"precision": precision, "recall": recall, "f1": f1, "to_other": other, "per": per}


def main() -> None:
    """Sweep the thresholds; print the table and the per-category scores at the best F1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--from", dest="low", type=float, default=0.10)
    parser.add_argument("--to", dest="high", type=float, default=0.50)
    parser.add_argument("--step", type=float, default=0.025)
    parser.add_argument("--max-per-item", type=int, default=3)
    parser.add_argument("--precision", choices=["int8", "fp32"], default="int8")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = load(args.labels)
    names, scores = cosines([text for text, _ in rows], args.precision)
    labels = [gold for _, gold in rows]
    results = []
    steps = round((args.high - args.low) / args.step)
    for k in range(steps + 1):
        threshold = round(args.low + k * args.step, 4)
        picked = [pick_categories(names, s, threshold, args.max_per_item, "other") for s in scores]
        results.append({"threshold": threshold, **score(labels, picked, names)})
    best = max(results, key=lambda r: r["f1"])
    labelled_other = sum(1 for gold in labels if gold == {"other"}) / len(labels)
    print(f"Machine: `{json.dumps(machine_info())}`\n")
    print(f"{len(rows)} labelled messages; labelled other: {labelled_other:.2f}\n")
    print("| threshold | precision | recall | F1 | to other |\n|---:|---:|---:|---:|---:|")
    for r in results:
        mark = " **best F1**" if r is best else ""
        print(
            f"| {r['threshold']:.3f}{mark} | {r['precision']:.3f} | {r['recall']:.3f} | "
            f"{r['f1']:.3f} | {r['to_other']:.2f} |"
        )
    print(f"\nPer category at {best['threshold']:.3f} (labelled, found, wrongly added):\n")
    print("| category | labelled | recall | precision |\n|---|---:|---:|---:|")
    for name, c in best["per"].items():
        labelled, found = c["tp"] + c["fn"], c["tp"] + c["fp"]
        recall = f"{c['tp'] / labelled:.2f}" if labelled else "-"
        precision = f"{c['tp'] / found:.2f}" if found else "-"
        print(f"| {name} | {labelled} | {recall} | {precision} |")
    print(
        "\nCommand: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/categories.py "
        f"--precision {args.precision}`; {date.today()}"
    )
    if args.json:
        dump = [{k: v for k, v in r.items() if k != "per"} for r in results]
        args.json.write_text(json.dumps({"results": dump, "names": names}, indent=2))


if __name__ == "__main__":
    main()
