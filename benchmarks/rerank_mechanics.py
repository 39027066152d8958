"""The mechanics of LLM rerank and tiered recall on LoCoMo (issue 44): what ``rerank=True`` and
``Memory.recall`` cost per call, with a scripted model, never a real one.

Each conversation of a LoCoMo-shaped file (``/work/locomo/locomo_dev.json``: conversations 4-10
of LoCoMo; 1-3 are kept out of every measurement) is read into a fresh store as
``memreader eval`` reads it (:mod:`memreader.evaluation`: fast mode, one ``add`` per session),
then for each question:

- ``search(q, k)`` and ``search(q, k, rerank=True)``, each timed in CPU seconds
  (``time.process_time``, this process only: the scripted model's own work is a regex and a
  list reversal); the **added CPU per search** is the difference;
- the **LLM calls per search** and the **prompt tokens per call** (cl100k over the messages
  sent), from the scripted model's record of its requests;
- ``recall(q, k)``: which tier it stopped after. The scripted model is oracle-free: it judges
  a tier sufficient when the recalled lines hold at least 60% of the query's words of four or
  more letters (it never sees the evidence labels), and it reranks by reversing the store's
  order (a fixed rule, so the order applied is checked, not its quality);
- the **headroom**: the share of questions whose evidence is among the ``max(3k, 20)``
  candidates a rerank sees, beside recall@k of the store's order: what a perfect reranker could
  reach at ``k``. A real model's place between the two is **not measured here**.

Run (about 2 minutes a conversation on 2 busy cores with the bundled embedder)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_mechanics.py --conversations conv-42
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_mechanics.py --json /tmp/rerank.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memreader import Memory  # noqa: E402
from memreader.evaluation import cites, load_eval_file, normalise_text  # noqa: E402
from memreader.evaluation.data import EvalConversation  # noqa: E402
from memreader.front.rerank import candidate_count  # noqa: E402
from memreader.testing import ScriptedLLM, ScriptedRequest  # noqa: E402
from memreader.windowing.tokens import get_tokenizer  # noqa: E402

LOCOMO_DEV = "/work/locomo/locomo_dev.json"
_WORD = re.compile(r"[A-Za-z]{4,}")


def scripted_model(request: ScriptedRequest) -> Any:
    """Rerank: the store's order reversed. Sufficiency: 60% of the query's long words recalled."""
    prompt = request.prompt
    if request.schema_name == "memory_rerank":
        return {"order": [int(n) for n in re.findall(r"^\[(\d+)\]", prompt, flags=re.M)][::-1]}
    query, _, recalled = prompt.partition("\n\n")
    words = {w.lower() for w in _WORD.findall(query.removeprefix("QUERY: "))}
    held = {w.lower() for w in _WORD.findall(recalled)}
    return {"sufficient": bool(words) and len(words & held) >= 0.6 * len(words)}


def measure(conv: EvalConversation, config: dict[str, Any], k: int, limit: int) -> dict[str, Any]:
    llm = ScriptedLLM(scripted_model)
    tokens = get_tokenizer("cl100k_base")
    settings = {**config, "llm": llm.config()}
    with tempfile.TemporaryDirectory() as folder:
        store = f"sqlite:///{folder}/m.db"
        with Memory({"config": settings}, store=store) as memory:
            for session in conv.sessions:
                messages = [m.as_message() for m in session.messages]
                memory.add(messages, user_id=conv.id, session_id=f"{conv.id}/{session.id}")
            questions = conv.questions[:limit]
            memory.search(questions[0].question, user_id=conv.id, k=k)  # warm-up, untimed
            rows = [ask(memory, conv, q, k, llm, tokens) for q in questions]
    return summarise(conv.id, rows, k)


def ask(
    memory: Memory, conv: EvalConversation, question: Any, k: int, llm: ScriptedLLM, tokens: Any
) -> dict[str, Any]:
    query, owner = question.question, conv.id
    evidence = set(question.evidence)
    texts = [t for t in (normalise_text(conv.message(e).content) for e in evidence) if t]
    started = time.process_time()
    plain = memory.search(query, user_id=owner, k=k)
    plain_cpu = time.process_time() - started
    pool = memory.search(query, user_id=owner, k=candidate_count(k))
    before = len(llm.requests)
    started = time.process_time()
    reranked = memory.search(query, user_id=owner, k=k, rerank=True)
    rerank_cpu = time.process_time() - started
    sent = llm.requests[before:]
    prompt_tokens = [sum(tokens.count(str(m["content"])) for m in r.messages) for r in sent]
    before = len(llm.requests)
    recalled = memory.recall(query, user_id=owner, k=k)
    return {
        "plain_cpu": plain_cpu,
        "rerank_cpu": rerank_cpu,
        "rerank_calls": len(sent),
        "prompt_tokens": prompt_tokens,
        "applied": all(h.rerank is not None and h.rerank.fallback is None for h in reranked),
        "found_plain": any(cites(h, evidence, texts) for h in plain),
        "found_reranked": any(cites(h, evidence, texts) for h in reranked),
        "found_pool": any(cites(h, evidence, texts) for h in pool),
        "stopped_after": recalled.tiers[-1].tier,
        "recall_calls": len(llm.requests) - before,
    }


def summarise(conv: str, rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    n = len(rows)
    tokens = [t for row in rows for t in row["prompt_tokens"]]
    stops = {
        tier: sum(r["stopped_after"] == tier for r in rows) / n
        for tier in ("category", "item", "resource")
    }
    return {
        "conversation": conv,
        "questions": n,
        "k": k,
        "candidates": candidate_count(k),
        "llm_calls_per_search": sum(r["rerank_calls"] for r in rows) / n,
        "prompt_tokens_mean": statistics.fmean(tokens) if tokens else 0.0,
        "prompt_tokens_max": max(tokens, default=0),
        "order_applied": sum(r["applied"] for r in rows) / n,
        "added_cpu_ms_p50": 1000
        * statistics.median(r["rerank_cpu"] - r["plain_cpu"] for r in rows),
        "plain_cpu_ms_p50": 1000 * statistics.median(r["plain_cpu"] for r in rows),
        "recall_at_k_store": sum(r["found_plain"] for r in rows) / n,
        "recall_at_k_reversed": sum(r["found_reranked"] for r in rows) / n,
        "evidence_in_candidates": sum(r["found_pool"] for r in rows) / n,
        "recall_stopped_after": stops,
        "recall_llm_calls_mean": sum(r["recall_calls"] for r in rows) / n,
    }


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| conversation | questions | LLM calls / search | prompt tokens mean (max) | "
        "added CPU ms p50 (search p50) | recall@k store | in candidates | recall@k reversed | "
        "recall stops after category / item / resource | recall LLM calls |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in results:
        stops = r["recall_stopped_after"]
        lines.append(
            f"| {r['conversation']} | {r['questions']} | {r['llm_calls_per_search']:.2f} | "
            f"{r['prompt_tokens_mean']:.0f} ({r['prompt_tokens_max']}) | "
            f"{r['added_cpu_ms_p50']:.2f} ({r['plain_cpu_ms_p50']:.1f}) | "
            f"{r['recall_at_k_store']:.3f} | {r['evidence_in_candidates']:.3f} | "
            f"{r['recall_at_k_reversed']:.3f} | {stops['category']:.2f} / {stops['item']:.2f} / "
            f"{stops['resource']:.2f} | {r['recall_llm_calls_mean']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--file", default=LOCOMO_DEV, help="a LoCoMo-shaped file (conversations 4-10)"
    )
    parser.add_argument("--conversations", default="all", help="comma list of ids, or all")
    parser.add_argument("--questions", type=int, default=10_000, help="at most this many each")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--embedder", default="local", help="local (bundled) or hash")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    data = load_eval_file(args.file)
    chosen = None if args.conversations == "all" else set(args.conversations.split(","))
    config = {"embedder": {"backend": args.embedder}}
    results = []
    for conv in data.conversations:
        if chosen is None or conv.id in chosen:
            results.append(measure(conv, config, args.k, args.questions))
            print(table(results[-1:]).splitlines()[-1], file=sys.stderr)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
