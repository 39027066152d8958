"""``context()`` shows a statement said again once, the newest saying
(:mod:`memreader.stores.context.repeats`): through :func:`pack_context`, then
``MemoryStore.context`` on both backends."""

from __future__ import annotations

from memreader.stores import MemoryStore
from memreader.stores.context import pack_context
from memreader.stores.context.repeats import REPEAT_WORDS
from tests.stores.context_memories import TOKENIZER, chat_memory, hit

SAID = "We are moving to Valencia in the end, the Lisbon flat fell through."


def talk(day: int, first: int = 0) -> list[tuple[str, str]]:
    """A chat window whose third message is :data:`SAID` (the others differ by ``day``)."""
    return [
        ("assistant", f"How was day {day} of the week, anything new at all?"),
        ("user", f"Day {day} was long, I walked for {day + 2} hours in the park."),
        ("user", SAID),
        ("assistant", f"Good luck with it, talk on day {day + 1}!"),
    ]


def test_a_statement_said_twice_is_shown_once_from_the_newer_memory() -> None:
    old = chat_memory("old", talk(1), session="s1", day=1)
    new = chat_memory("new", talk(9), session="s2", day=9)
    # The older saying is the better hit, and the budget fits both sayings.
    hits = [hit(old), hit(new, 0.8)]
    context = pack_context("Where is the move to?", hits, TOKENIZER, 300)
    assert context.text.count("Valencia") == 1
    (part,) = [part for part in context.parts if "Valencia" in part.text]
    assert part.memory_id == "new" and 2 in part.messages


def test_different_statements_are_not_repeats() -> None:
    assert 0 < REPEAT_WORDS < 1
    old = chat_memory("old", [("user", "We are moving to Valencia.")], day=1)
    new = chat_memory("new", [("user", "We are moving to Lisbon.")], session="s2", day=9)
    context = pack_context("moving", [hit(old), hit(new)], TOKENIZER, 300)
    assert {part.memory_id for part in context.parts} == {"old", "new"}


def test_the_same_line_by_two_speakers_is_not_a_repeat() -> None:
    old = chat_memory("old", [("user", "Congrats on the new job!")], names=["Ana"], day=1)
    new = chat_memory(
        "new", [("user", "Congrats on the new job!")], names=["Bo"], session="s2", day=9
    )
    context = pack_context("new job", [hit(old), hit(new)], TOKENIZER, 300)
    assert {part.speaker for part in context.parts} == {"Ana", "Bo"}


def test_chinese_lines_repeat_by_their_words() -> None:
    old = chat_memory("old", [("user", "我们下个月搬到瓦伦西亚。")], day=1)
    new = chat_memory("new", [("user", "午饭很好吃。")], session="s2", day=9)
    same = chat_memory("same", [("user", "我们下个月搬到瓦伦西亚。")], session="s3", day=5)
    hits = [hit(old), hit(new), hit(same)]
    context = pack_context("瓦伦西亚 午饭", hits, TOKENIZER, 300)
    # The two different lines are both shown, the line said twice once (the newer saying).
    assert {part.memory_id for part in context.parts} == {"new", "same"}


def test_the_store_shows_the_newest_saying_of_a_repeated_statement(store: MemoryStore) -> None:
    old = chat_memory("0f0e0d0c-0000-4000-8000-000000000001", talk(1), session="s1", day=1)
    new = chat_memory("0f0e0d0c-0000-4000-8000-000000000002", talk(9), session="s2", day=9)
    store.write([old.item, new.item], user_id="u")
    context = store.context("moving to Valencia, Lisbon flat", user_id="u", max_tokens=400)
    assert context.text.count("Valencia") == 1
    (part,) = [part for part in context.parts if "Valencia" in part.text]
    assert part.memory_id == new.id and part.session_id == "s2"
