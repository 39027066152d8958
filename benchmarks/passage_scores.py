"""Passage-level hits and the score scale (issue 30): planted facts in real chats, paraphrased
questions, and questions about nothing stored.

MemoryBank's 15 English users are pooled into two owners (A, B: ~32 fast-mode windows of ~780
tokens each, as a LoCoMo conversation yields), and 40 facts (one user message each, answered by
a generic "good to know") are planted at random places in them. Each fact's question is a
paraphrase (``"What is the name of the dog I got?"`` for ``"...adopted a beagle puppy and named
him Biscuit."``): a hit at k when one of the k best hits cites the fact's message. Each owner is
also asked 12 questions about nothing stored (``"What is the boiling point of tungsten?"``).

Reported: recall@1/3/10, whether the hit's best passage is the fact's message, search latency
p50/p95, ingestion time (read + write), and for cuts of ``min_score`` the share of evidence hits
kept against the unrelated questions' hits kept (and how many of those return nothing).

Run by hand from the repository root (about 2 minutes on 2 cores)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/passage_scores.py --store /tmp/p.db

(an existing ``--store`` file is searched again without re-ingesting).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MEMORYBANK = ROOT.parent / "shared" / "data" / "memorybank" / "memory_bank_en.json"
if not MEMORYBANK.exists():
    MEMORYBANK = ROOT / "data" / "memorybank" / "memory_bank_en.json"

FACTS = [
    (
        "By the way, I finally adopted a beagle puppy last weekend and named him Biscuit.",
        "What is the name of the dog I got?",
    ),
    (
        "My sister Laura is getting married in Lisbon next June.",
        "Where is my sister's wedding taking place?",
    ),
    (
        "I switched jobs, I now work as a data analyst at a hospital downtown.",
        "What is my current occupation?",
    ),
    ("I broke my left wrist while skateboarding on Tuesday.", "Which injury did I get recently?"),
    (
        "My favourite dish growing up was my grandmother's mushroom risotto.",
        "What food did I love as a child?",
    ),
    (
        "I've started learning Japanese with an app every morning before work.",
        "Which language am I studying?",
    ),
    ("We bought a used blue Subaru Outback for our road trips.", "What car did we purchase?"),
    (
        "I am allergic to peanuts, so I always carry an epinephrine pen.",
        "Do I have any food allergies?",
    ),
    (
        "My daughter Mia just turned seven and wants to be an astronaut.",
        "How old is my daughter now?",
    ),
    (
        "I ran my first half marathon in Boston in 2 hours and 5 minutes.",
        "What was my time in the race I ran?",
    ),
    (
        "Our apartment lease ends in March, so we're looking at houses in Denver.",
        "Which city are we thinking of moving to?",
    ),
    (
        "I've been reading Dune again; it's still my all-time favourite novel.",
        "What book do I like the most?",
    ),
    (
        "My brother Tom lost his job at the car factory last month.",
        "What happened to my brother's employment?",
    ),
    (
        "I play bass guitar in a small jazz band on Friday nights.",
        "What instrument do I perform with?",
    ),
    (
        "I had to cancel my trip to Iceland because my passport expired.",
        "Why couldn't I travel abroad?",
    ),
    (
        "My therapist suggested I keep a gratitude journal every evening.",
        "What did my counselor recommend I do?",
    ),
    (
        "I planted tomatoes, basil and zucchini in the backyard garden this spring.",
        "What vegetables am I growing at home?",
    ),
    ("My husband Raj is a pilot for a regional airline.", "What does my spouse do for a living?"),
    ("I volunteer at the animal shelter every second Saturday.", "Where do I do volunteer work?"),
    ("My favourite colour has always been emerald green.", "Which colour do I prefer?"),
    (
        "I'm saving up to buy a sailboat by the end of next year.",
        "What big purchase am I saving money for?",
    ),
    ("I got a tattoo of a compass on my right shoulder.", "What design is my tattoo?"),
    (
        "Our cat Pepper knocked my coffee onto the laptop and it died.",
        "How did my computer get broken?",
    ),
    ("I was born in a small village near Krakow in Poland.", "Where is my birthplace?"),
    (
        "My son Leo scored the winning goal in his soccer final.",
        "What did my son achieve in the football match?",
    ),
    ("I've been vegetarian for almost ten years now.", "How long have I avoided eating meat?"),
    ("My mother is recovering from knee surgery at home.", "Which operation did my mom have?"),
    ("I take the 7:40 train to the office every weekday.", "How do I commute to work?"),
    ("I'm afraid of heights, so I skipped the Eiffel Tower visit.", "What phobia do I have?"),
    (
        "My best friend Carla moved to Melbourne for a teaching job.",
        "Why did my closest friend relocate?",
    ),
    ("I collect vintage vinyl records, mostly 70s soul.", "What do I collect as a hobby?"),
    (
        "We celebrated our tenth wedding anniversary in Kyoto.",
        "Where did we go for our anniversary?",
    ),
    (
        "I'm training for a triathlon that takes place in September.",
        "What sporting event am I preparing for?",
    ),
    ("My grandfather taught me how to play chess when I was five.", "Who taught me chess?"),
    (
        "I started a small bakery business selling sourdough at the farmers market.",
        "What kind of business did I launch?",
    ),
    (
        "I can't drink coffee anymore because it gives me heart palpitations.",
        "Why did I stop having caffeine?",
    ),
    ("Our neighbour's oak tree fell on our garage during the storm.", "What damaged our garage?"),
    (
        "I'm learning to fly drones for aerial photography.",
        "What new photography technique am I picking up?",
    ),
    (
        "My favourite band is Radiohead and I saw them live in 2017.",
        "Which musicians do I like best?",
    ),
    ("I just finished my master's degree in marine biology.", "What did I recently graduate in?"),
]
UNRELATED = [
    "How do I configure a Kubernetes ingress controller with TLS?",
    "What is the boiling point of tungsten?",
    "Explain the proof of Fermat's last theorem",
    "stock price of semiconductor companies in 1998",
    "How many moons does Neptune have?",
    "recipe for Hungarian goulash with paprika",
    "difference between TCP and UDP congestion control",
    "Who won the 1954 football world cup final?",
    "quantum chromodynamics gluon confinement",
    "How to replace a bicycle chain derailleur",
    "tax rules for cryptocurrency in Germany",
    "Rust borrow checker lifetime elision rules",
]

CUTS = (0.05, 0.08, 0.1, 0.15, 0.2, 0.25)


def conversations(seed: int = 7) -> dict[str, tuple[list[dict[str, str]], list[tuple[str, int]]]]:
    """Each owner's messages and its questions (question, index of the fact's message)."""
    from memreader.scenes.memorybank import load_memorybank

    users = load_memorybank(MEMORYBANK)
    rng = random.Random(seed)
    names = sorted(users)
    planted: dict[str, list[tuple[str, str]]] = {}
    for i, pair in enumerate(FACTS):
        planted.setdefault(names[i % len(names)], []).append(pair)
    out: dict[str, tuple[list[dict[str, str]], list[tuple[str, int]]]] = {}
    for n, user in enumerate(names):
        days = [list(day) for day in users[user]]
        for fact, question in planted.get(user, []):
            day = rng.randrange(len(days))
            at = rng.randrange(len(days[day]) + 1)
            at -= at % 2
            days[day][at:at] = [
                {"role": "user", "content": fact, "question": question},
                {"role": "assistant", "content": "Thanks for telling me, that is good to know."},
            ]
        messages, questions = out.setdefault("A" if n % 2 else "B", ([], []))
        for message in (m for day in days for m in day):
            if "question" in message:
                questions.append((message["question"], len(messages)))
            messages.append({"role": message["role"], "content": message["content"]})
    return out


def run(path: str) -> dict[str, Any]:
    from memreader import SimpleStructMemReader
    from memreader.readers.simple import SimpleStructMemReaderConfig
    from memreader.stores import open_store

    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder={"backend": "local"}))
    data = conversations()
    fresh = not os.path.exists(path)
    result: dict[str, Any] = {}
    with open_store("sqlite:///" + path, embedder=reader.runtime.embedder) as store:
        if fresh:
            read_s = write_s = 0.0
            for owner, (messages, _) in data.items():
                started = time.perf_counter()
                info = {"user_id": owner, "session_id": "s"}
                items = [
                    i for s in reader.get_memory([messages], type="chat", info=info) for i in s
                ]
                read_s += time.perf_counter() - started
                started = time.perf_counter()
                store.write(items)
                write_s += time.perf_counter() - started
            result["read_s"], result["write_s"] = round(read_s, 1), round(write_s, 1)
        store.search("warm up", user_id="A")
        ranks, best_ok, evidence, unrelated, latency = [], [], [], [], []
        for owner, (_, questions) in data.items():
            asked = [(q, i) for q, i in questions] + [(q, None) for q in UNRELATED]
            for question, index in asked:
                started = time.perf_counter()
                hits = store.search(question, user_id=owner, k=10)
                latency.append(time.perf_counter() - started)
                if index is None:
                    unrelated.append([h.score.relevance for h in hits])
                    continue
                cites = [
                    any(s.message_index == index for s in h.memory.item.metadata.sources)
                    for h in hits
                ]
                rank = cites.index(True) + 1 if True in cites else None
                ranks.append(rank)
                if rank is not None:
                    hit = hits[rank - 1]
                    evidence.append(hit.score.relevance)
                    top = hit.passages[0] if hit.passages else None
                    sources = hit.memory.item.metadata.sources
                    best_ok.append(
                        top is not None
                        and top.source_index is not None
                        and sources[top.source_index].message_index == index
                    )
    latency.sort()
    result.update(
        questions=len(ranks),
        recall={
            k: round(sum(1 for r in ranks if r and r <= k) / len(ranks), 3) for k in (1, 3, 10)
        },
        best_passage_is_evidence=f"{sum(best_ok)}/{len(best_ok)}" if best_ok else "-",
        search_p50_ms=round(1000 * latency[len(latency) // 2], 1),
        search_p95_ms=round(1000 * latency[int(0.95 * len(latency))], 1),
        cuts=[
            {
                "min_score": cut,
                "evidence_kept": round(sum(e >= cut for e in evidence) / len(evidence), 3),
                "unrelated_hits_kept": f"{sum(sum(x >= cut for x in u) for u in unrelated)}"
                f"/{sum(len(u) for u in unrelated)}",
                "unrelated_questions_with_none": (
                    f"{sum(all(x < cut for x in u) for u in unrelated)}/{len(unrelated)}"
                ),
            }
            for cut in CUTS
        ],
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True, help="SQLite file (reused when it exists)")
    args = parser.parse_args()
    print(json.dumps(run(args.store), indent=1))


if __name__ == "__main__":
    main()
