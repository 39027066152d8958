"""A page of search hits as the service sends it (``hits_body``) is, byte for byte, the JSON of
the hits' dicts (``hit_json``) that every other surface shows: what the service writes faster
must never be a different answer."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime

from memreader import Memory
from memreader.service.state import json_body
from memreader.stores.hits import Reranked
from memreader.stores.shapes import hit_json, hits_body

_WORDS = [
    "Porto",
    "coffee",
    "sister",
    "run",
    "Åsa",
    "日本語",
    "naïve",
    "emoji 😀",
    "\u2028",
    "</b>",
]


def _memory_of_many_shapes(rng: random.Random) -> Memory:
    memory = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
    for n in range(60):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12))) + ' "quoted" \\'
        memory.add_memory(
            f"{text} {n}",
            user_id="ana",
            session_id=f"s{n % 4}",
            importance=rng.choice([None, 0.0, 0.25, 1.0]),
            valid_from=rng.choice([None, datetime(2024, 2, 29, 12, 30, tzinfo=UTC)]),
            metadata=rng.choice(
                [None, {"info": {"score": 1e-05, "big": 2.5e300, "nested": [1, "é"]}}]
            ),
            tags=rng.choice([None, ["x", "ü"]]),
            agent_id=rng.choice([None, "bot"]),
        )
    memory.add("I moved to Porto last May. My sister Åsa visits in June.", user_id="ana")
    return memory


def test_the_service_hits_body_is_the_hits_json_byte_for_byte() -> None:
    rng = random.Random(42)
    memory = _memory_of_many_shapes(rng)
    pages = 0
    for _ in range(40):
        query = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
        hits = memory.search(query, user_id="ana", k=rng.choice([1, 5, 10, 100]))
        if rng.random() < 0.3:  # a reranked page: each hit says how the LLM placed it
            hits = [
                dataclasses.replace(
                    hit, rerank=Reranked(rank or None, rank, rng.choice([None, "é"]))
                )
                for rank, hit in enumerate(hits)
            ]
        assert hits_body(hits) == json_body({"hits": [hit_json(hit) for hit in hits]})
        pages += bool(hits)
    assert pages > 30  # most queries found something: the bytes compared were hits, not []
    assert hits_body([]) == b'{"hits":[]}'
    memory.close()
