"""What the reconcile pass decides, measured against labelled cases (run by hand).

Each case is one stored memory (with the date it began to hold), one new memory, and the
decision a careful reader would make: ``ADD`` (unrelated), ``UPDATE`` (the same fact, said more
fully), ``SUPERSEDE`` (a newer contradiction) or ``NONE`` (already stored). Each case is one
``reconcile_plan`` call, exactly as the pass makes it, against any OpenAI-compatible server:

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/reconcile.py \\
        --base-url http://127.0.0.1:8080/v1 --model qwen2.5-7b-instruct \\
        [--structured-output json_object_schema] [--api-key-env OPENAI_API_KEY]

With ``--cosines`` (no server needed) it prints instead the cosine of each pair under the
default local embedder: where the stores' near-duplicate threshold (0.95) falls between
paraphrases (which should merge) and updates or contradictions (which must not).

It prints accuracy, the confusion of expected and decided events, how many decisions fell back
to ``ADD`` (a target not shown, a malformed answer, a failed call), the calls and tokens, and the
seconds per call. The pass stays off by default until a real model has been measured here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memreader.extraction.fine import run_plan
from memreader.extraction.reconcile import Neighbour, reconcile_plan
from memreader.llms import LLMRouter, LLMSlots, UsageMeter

#: (stored memory, the date it began to hold, new memory, the expected event)
CASES: list[tuple[str, str, str, str]] = [
    (
        "The user lives in Lisbon.",
        "2024-01-10",
        "The user moved to Porto in May 2024.",
        "SUPERSEDE",
    ),
    (
        "The user works at Acme as a designer.",
        "2023-03-01",
        "The user now works at Globex.",
        "SUPERSEDE",
    ),
    ("The user is vegetarian.", "2022-05-01", "The user started eating fish again.", "SUPERSEDE"),
    (
        "The user's sister is called Ana.",
        "2023-01-01",
        "The user's sister Ana lives in Madrid.",
        "UPDATE",
    ),
    ("The user has a dog.", "2023-08-02", "The user has a beagle named Rex.", "UPDATE"),
    (
        "The user plays piano.",
        "2022-09-09",
        "The user has played classical piano for 10 years.",
        "UPDATE",
    ),
    ("The user likes green tea.", "2023-06-01", "The user enjoys green tea.", "NONE"),
    ("The user was born in 1990.", "2023-02-02", "The user's birth year is 1990.", "NONE"),
    ("The user lives in Lisbon.", "2024-01-10", "The user lives in Lisbon.", "NONE"),
    ("The user likes green tea.", "2023-06-01", "The user is allergic to peanuts.", "ADD"),
    ("The user has a dog.", "2023-08-02", "The user's favourite film is Alien.", "ADD"),
    ("The user plays piano.", "2022-09-09", "The user will fly to Tokyo on 2024-07-01.", "ADD"),
    (
        "The user drives a red car.",
        "2023-04-04",
        "The user sold the red car and now cycles.",
        "SUPERSEDE",
    ),
    ("The user is single.", "2021-01-01", "The user married Tom in June 2024.", "SUPERSEDE"),
    (
        "The user studies law.",
        "2022-10-10",
        "The user studies law at the University of Coimbra.",
        "UPDATE",
    ),
    ("The user runs every morning.", "2023-05-05", "The user goes running each morning.", "NONE"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--cosines", action="store_true", help="the pairs' cosines, no LLM")
    parser.add_argument("--structured-output", default="json_schema")
    parser.add_argument("--api-key-env", default=None)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.cosines:
        print_cosines()
        return
    if not args.base_url or not args.model:
        parser.error("--base-url and --model are needed (or --cosines)")
    llm = {
        "backend": "openai",
        "model": args.model,
        "base_url": args.base_url,
        "structured_output": args.structured_output,
        "max_tokens": 256,
        "timeout": 120,
        "max_retries": 1,
    }
    if args.api_key_env:
        llm["api_key"] = os.environ[args.api_key_env]
    meter = UsageMeter()
    router = LLMRouter(LLMSlots(llm=llm), meter=meter)
    confusion: Counter[tuple[str, str]] = Counter()
    fallbacks = 0
    started = time.perf_counter()
    for stored, since, new, expected in CASES:
        plan = reconcile_plan([new], [Neighbour("m", stored, since)], "en")
        (decision,) = run_plan(plan, router, meter)
        confusion[(expected, decision.event)] += 1
        fallbacks += not decision.reason.startswith("model:")
        print(f"{expected:9} -> {decision.event:9} {decision.reason[:70]!r}  | {new}")
    elapsed = time.perf_counter() - started
    router.close()
    correct = sum(n for (want, got), n in confusion.items() if want == got)
    usage = meter.snapshot()
    result = {
        "model": args.model,
        "cases": len(CASES),
        "correct": correct,
        "accuracy": round(correct / len(CASES), 3),
        "fallback_to_add": fallbacks,
        "confusion": {f"{w}->{g}": n for (w, g), n in sorted(confusion.items())},
        "calls": usage.requests,
        "prompt_tokens": usage.total.prompt_tokens,
        "completion_tokens": usage.total.completion_tokens,
        "seconds_per_call": round(elapsed / max(1, usage.requests), 2),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


def print_cosines() -> None:
    """Each pair's cosine under the default local embedder, by expected event."""
    import numpy as np

    from memreader.embedders import build_embedder
    from memreader.embedders.config import EmbedderConfig

    embedder = build_embedder(EmbedderConfig())
    for stored, _, new, expected in sorted(CASES, key=lambda case: case[3]):
        a, b = (np.asarray(v) for v in embedder.embed([stored, new]))
        cosine = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        print(f"{expected:9} {cosine:.3f}  {stored} | {new}")


if __name__ == "__main__":
    main()
