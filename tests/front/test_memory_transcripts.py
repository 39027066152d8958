"""An erasing forget reaches the raw transcripts a face keeps beside the store
(memreader.front.transcripts): each keeper's count in the receipt, a failing keeper named in
its residue while the others are still asked, and keepers held weakly."""

from __future__ import annotations

import gc

import pytest

from memreader import Memory
from memreader.errors import InputError
from memreader.stores import SourceSelector
from tests.common import HASH_MEMORY as CONFIG


class Keeper:
    def __init__(self, removes: int = 1, fails: bool = False) -> None:
        self.removes, self.fails = removes, fails
        self.asked: list[tuple[str, SourceSelector]] = []

    def erase_source(self, owner: str, source: SourceSelector) -> int:
        self.asked.append((owner, source))
        if self.fails:
            raise OSError("disk gone")
        return self.removes

    def __repr__(self) -> str:
        return f"Keeper(fails={self.fails})"


def test_an_erasing_forget_asks_every_keeper_and_counts_what_they_removed() -> None:
    with Memory(CONFIG, store="sqlite://:memory:") as memory:
        memory.add("I moved to Lisbon.", user_id="ana", session_id="s1")
        good, broken, other = Keeper(2), Keeper(fails=True), Keeper(1)
        for keeper in (good, broken, other):
            memory.keep_transcripts(keeper)
        receipt = memory.forget("session:s1", user_id="ana", erase=True)
        assert receipt.removed["transcripts"] == 3 and receipt.erased
        assert any("Keeper(fails=True)" in line and "disk gone" in line for line in receipt.residue)
        assert good.asked == [("ana", SourceSelector(session_id="s1"))] == other.asked


def test_a_forget_without_erase_leaves_transcripts_alone() -> None:
    with Memory(CONFIG, store="sqlite://:memory:") as memory:
        keeper = Keeper()
        memory.keep_transcripts(keeper)
        memory.add("I moved to Lisbon.", user_id="ana", session_id="s1")
        assert "transcripts" not in memory.forget("session:s1", user_id="ana").removed
        assert keeper.asked == []


def test_keepers_are_held_weakly_and_must_have_erase_source() -> None:
    with Memory(CONFIG, store="sqlite://:memory:") as memory:
        keeper = Keeper()
        memory.keep_transcripts(keeper)
        del keeper
        gc.collect()
        assert "transcripts" not in memory.forget("session:s1", user_id="ana", erase=True).removed
        with pytest.raises(InputError, match="needs erase_source"):
            memory.keep_transcripts(object())  # type: ignore[arg-type]
