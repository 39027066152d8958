"""A read's deadline is checked inside long steps, not only between them: windowing one large
chat (one scene) stops within a message of the deadline, and so do the strategy reader's
grouping and fast mode's importance scoring. Counted, not timed: the deadline cancels itself
at its n-th check inside the step, and the read must stop right there."""

from __future__ import annotations

from typing import Any

import pytest

from memreader import (
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    StrategyStructMemReader,
    StrategyStructMemReaderConfig,
)
from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded

INFO = {"user_id": "u1", "session_id": "s1"}
#: One scene of many short messages: the shape of a 6 MB chat, small.
SMALL = {"max_tokens": 128, "overlap_tokens": 16}
CHAT = [[{"role": "user", "content": f"Message {n}: tea in Porto at noon."} for n in range(400)]]


class CancelsAt(Deadline):
    """A deadline that cancels itself at its ``n``-th check made where ``where`` starts with
    ``prefix``, and counts the checks made there."""

    def __init__(self, prefix: str, n: int) -> None:
        super().__init__(None, what="the read")
        self.prefix, self.n, self.seen = prefix, n, 0

    def check(self, where: str) -> None:
        if where.startswith(self.prefix):
            self.seen += 1
            if self.seen == self.n:
                self.cancel()
        super().check(where)


def read(reader: Any, deadline: Deadline) -> DeadlineExceeded:
    with pytest.raises(DeadlineExceeded) as caught:
        reader.get_memory(CHAT, "chat", dict(INFO), "fast", deadline=deadline)
    return caught.value


def test_windowing_one_large_chat_stops_within_a_message_of_the_deadline() -> None:
    config = SimpleStructMemReaderConfig(embedder=None, window=SMALL)
    deadline = CancelsAt("while windowing", 50)
    stopped = read(SimpleStructMemReader(config), deadline)
    assert stopped.where == "while windowing, before message part 49"
    assert deadline.seen == 50  # nothing of the scene's other 350 messages was cut


def test_a_long_message_is_checked_piece_by_piece() -> None:
    config = SimpleStructMemReaderConfig(embedder=None, window=SMALL)
    one = [[{"role": "user", "content": "tea and biscuits " * 4000}]]
    deadline = CancelsAt("while windowing, in message part 0", 3)
    with pytest.raises(DeadlineExceeded) as caught:
        SimpleStructMemReader(config).get_memory(one, "chat", dict(INFO), "fast", deadline=deadline)
    assert caught.value.where.startswith("while windowing, in message part 0 at character")


def test_the_strategy_readers_grouping_checks_the_deadline_between_groups() -> None:
    config = StrategyStructMemReaderConfig(
        embedder=None, strategy={"chunk_by": "session", "chunk_session": 10, "chunk_overlap": 2}
    )
    deadline = CancelsAt("while grouping", 5)
    stopped = read(StrategyStructMemReader(config), deadline)
    assert stopped.where == "while grouping, before group 4"


def test_importance_scoring_checks_the_deadline_per_item() -> None:
    config = SimpleStructMemReaderConfig(embedder=None, window=SMALL)
    deadline = CancelsAt("before scoring item", 3)
    stopped = read(SimpleStructMemReader(config), deadline)
    assert stopped.where == "before scoring item 2 of scene 0"
