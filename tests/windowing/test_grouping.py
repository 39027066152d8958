"""The strategy reader's chat splitter: whole-message groups, exact spans, budgets, overlap."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError
from memreader.scenes.api_parts import Part
from memreader.scenes.scene import Message
from memreader.windowing.chunking import RecursiveSplitter
from memreader.windowing.grouping import (
    GroupBy,
    GroupingConfig,
    MessageGroup,
    Slice,
    group_windows,
    message_runs,
    plan_groups,
    windows_by_group,
)
from memreader.windowing.parsers import PartRef
from memreader.windowing.tokens import Tokenizer, get_tokenizer
from memreader.windowing.windows import Segment, Unit, Window, Windower

TOKENIZER = get_tokenizer()
SPLITTER = RecursiveSplitter()

# Text that stresses BPE and UTF-8: ASCII words, digits, punctuation, CJK, emoji, accents.
alphabet = st.sampled_from(
    list("abcdefghij klmnop qrst uvwxyz 0123456789 .,;:!?'\"()-_\n\t")
    + list("你好世界记忆测试中文字符")
    + ["🎉", "👍🏽", "👨‍👩‍👧", "é", "ß", "ॐ", "한", "ü", "\u200d", "  ", "'s", "\r\n"]
)
texts = st.one_of(
    st.lists(alphabet, max_size=60).map("".join),
    st.lists(alphabet, max_size=500).map("".join),
)
prefixes = st.sampled_from(
    ["", "user: ", "assistant: [2023-04-27]: ", "tool: [1:56 pm on 8 May, 2023]: "]
)


def chat(messages: list[tuple[str, list[str], bool]]) -> list[Unit]:
    """Units for ``(prefix, part texts, keyed)`` messages; an unkeyed message is one unit each."""
    units: list[Unit] = []
    for index, (prefix, parts, keyed) in enumerate(messages):
        message = Message(index, "user", tuple(Part("text", t, i) for i, t in enumerate(parts)))
        for part in message.parts:
            units.append(Unit(part.text, prefix, PartRef(message, part) if keyed else None))
    return units


messages_strategy = st.lists(
    st.tuples(prefixes, st.lists(texts, min_size=1, max_size=3), st.booleans()),
    min_size=1,
    max_size=14,
)


def lines(units: list[Unit], group: MessageGroup) -> str:
    return "\n".join(s.prefix + units[s.unit].text[s.start : s.end] for s in group.slices)


def flat(windows: list[Window]) -> list[Segment]:
    return [s for w in windows for s in w.segments]


def check(units: list[Unit], config: GroupingConfig, windower: Windower) -> list[MessageGroup]:
    """Every invariant that holds in both modes; returns the plan for mode-specific checks."""
    groups = plan_groups(units, config)
    nested = windows_by_group(units, config, windower)
    assert len(nested) == len(groups)
    windows = group_windows(units, config, windower)
    assert windows == [w for ws in nested for w in ws], "deterministic, and the flat view"
    assert [w.index for w in windows] == list(range(len(windows)))
    runs = message_runs(units)
    covered: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(units))}
    for w in windows:
        real = TOKENIZER.count(w.text)
        assert real <= windower.max_tokens, f"window {w.index}: {real} > {windower.max_tokens}"
        assert w.tokens == real
        for s in w.segments:
            unit = units[s.unit]
            piece = unit.text[s.start : s.end]
            assert s.line in (unit.prefix + piece, piece)
            assert s.tokens == TOKENIZER.count(s.line + "\n")
            covered[s.unit].append((s.start, s.end))
    for i, unit in enumerate(units):
        assert covered[i], f"unit {i} is in no window"
        position = 0
        for start, end in sorted(covered[i]):
            assert start <= position, f"unit {i}: characters {position}:{start} are lost"
            position = max(position, end)
        assert position == len(unit.text)
    assert groups[0].messages.start == 0
    assert groups[-1].messages.stop == len(runs), "the last message is in the last group"
    for previous, group in itertools.pairwise(groups):
        # Input order: each group starts no earlier and ends later than the one before.
        assert previous.messages.start <= group.messages.start
        assert previous.messages.stop <= group.messages.stop
    for k, (group, ws) in enumerate(zip(groups, nested, strict=True)):
        segments = flat(ws)
        # The group's windows tile its slices exactly, in order.
        cursor = 0
        for part in group.slices:
            position = part.start
            while cursor < len(segments) and segments[cursor].unit == part.unit:
                s = segments[cursor]
                if s.start == position and (s.end > position or part.start == part.end):
                    position = s.end
                    cursor += 1
                    if position == part.end:
                        break
                else:
                    break
            assert position == part.end, f"group {k}: slice {part} is not tiled"
        assert cursor == len(segments)
        # Only a group's first window carries, and exactly the overlap messages' segments.
        overlap = [s for s in segments if _in(s, group.slices[: group.carried])]
        assert segments[: len(overlap)] == overlap
        assert ws[0].carried == sum(
            1 for s in ws[0].segments if _in(s, group.slices[: group.carried])
        )
        assert all(w.carried == 0 for w in ws[1:])
        if k == 0:
            assert group.carried == 0
        elif group.carried:
            before = flat(nested[k - 1])
            assert before[len(before) - len(overlap) :] == overlap, "carried = previous tail"
            carried_units = {s.unit for s in group.slices[: group.carried]}
            assert all(
                s.start == 0 and s.end == len(units[s.unit].text)
                for s in group.slices[: group.carried]
            )
            last = groups[k - 1].messages
            shared = range(group.messages.start, last.stop)
            assert carried_units == {u for m in shared for u in runs[m]}
        if not group.split:
            # Whole messages, exactly.
            assert [s.unit for s in group.slices] == [u for m in group.messages for u in runs[m]]
    return groups


def _in(segment: Segment, slices: tuple[Slice, ...]) -> bool:
    return any(segment.unit == s.unit for s in slices)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=messages_strategy,
    content_length=st.integers(64, 700),
    overlap=st.integers(0, 4),
    max_tokens=st.integers(64, 300),
    recursive=st.booleans(),
)
def test_content_length_groups(
    messages: list[tuple[str, list[str], bool]],
    content_length: int,
    overlap: int,
    max_tokens: int,
    recursive: bool,
) -> None:
    units = chat(messages)
    config = GroupingConfig(
        chunk_by="content_length", content_length=content_length, chunk_overlap=overlap
    )
    windower = Windower(max_tokens, max_tokens // 4, splitter=SPLITTER if recursive else None)
    groups = check(units, config, windower)
    runs = message_runs(units)
    length = [len(lines(units, MessageGroup(tuple(_whole(units, r)), 0, range(0)))) for r in runs]
    shared_of: dict[int, int] = {}
    reads = [0] * len(runs)
    for group in groups:
        for m in group.messages:
            reads[m] += not group.split  # a split message's pieces are read once each
    assert max(reads, default=0) <= 2, "every message is read at most twice"
    for k, group in enumerate(groups):
        assert len(lines(units, group)) <= content_length
        if group.split:
            assert len(group.messages) == 1 and group.carried == 0
            assert length[group.messages.start] > content_length
            continue
        assert all(length[m] <= content_length for m in group.messages)
        nxt = group.messages.stop
        if k + 1 < len(groups) and nxt < len(runs) and length[nxt] <= content_length:
            # Greedy: the next message did not fit.
            assert len(lines(units, group)) + 1 + length[nxt] > content_length
        if k == 0 or groups[k - 1].split:
            assert group.carried == 0
            continue
        previous = groups[k - 1]
        shared = previous.messages.stop - group.messages.start
        assert 0 <= shared <= overlap
        assert shared < len(group.messages), "every group brings a new message"
        carried = range(group.messages.start, group.messages.start + shared)
        assert sum(length[m] + 1 for m in carried) <= content_length // 2, "half at most"
        before = shared_of.get(k - 1, 0)
        assert group.messages.start >= previous.messages.start + before, "never carried twice"
        first_read = previous.messages.stop - (previous.messages.start + before)
        if shared < min(overlap, first_read):
            # One more carried message would not have fit beside the first new one, or would
            # have made the carried text more than half the budget.
            m = previous.messages.stop - shared - 1
            new = previous.messages.stop
            carry = sum(length[i] + 1 for i in range(m, new))
            assert carry > content_length // 2 or carry + length[new] > content_length
        shared_of[k] = shared


def _whole(units: list[Unit], run: range) -> list[Slice]:
    return [Slice(u, 0, len(units[u].text), units[u].prefix) for u in run]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=messages_strategy,
    size_overlap=st.integers(1, 6).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n // 2))),
    max_tokens=st.integers(64, 300),
    recursive=st.booleans(),
)
def test_session_groups(
    messages: list[tuple[str, list[str], bool]],
    size_overlap: tuple[int, int],
    max_tokens: int,
    recursive: bool,
) -> None:
    size, overlap = size_overlap
    units = chat(messages)
    config = GroupingConfig(chunk_by="session", chunk_session=size, chunk_overlap=overlap)
    windower = Windower(max_tokens, 0, splitter=SPLITTER if recursive else None)
    groups = check(units, config, windower)
    total = len(message_runs(units))
    for group in groups[:-1]:
        assert len(group.messages) == size
    assert 1 <= len(groups[-1].messages) <= size
    for previous, group in itertools.pairwise(groups):
        assert previous.messages.stop - group.messages.start == overlap
        assert group.messages.stop > previous.messages.stop, "no group of overlap only"
    assert len(groups) == (1 if total <= size else 1 + -(-(total - size) // (size - overlap)))


def test_message_runs_follow_message_index() -> None:
    units = chat([("user: ", ["a", "b"], True), ("", ["c"], False), ("", ["d", "e"], True)])
    assert message_runs(units) == [range(0, 2), range(2, 3), range(3, 5)]
    assert message_runs([Unit("x"), Unit("y")]) == [range(0, 1), range(1, 2)]
    assert message_runs([]) == []


def test_empty_input_gives_no_windows() -> None:
    assert group_windows([], GroupingConfig(), Windower(64, 0)) == []


def test_long_message_is_split_into_exact_pieces() -> None:
    paragraph = "The tea was steamed and rolled by hand in the hills. " * 6
    text = "\n".join(f"{i}: {paragraph}" for i in range(40))
    units = chat(
        [("user: ", ["hi"], True), ("assistant: ", [text], True), ("user: ", ["ok"], True)]
    )
    config = GroupingConfig(content_length=1000, chunk_overlap=1)
    windower = Windower(1024, 0)
    groups = check(units, config, windower)
    pieces = [g for g in groups if g.split]
    assert len(pieces) >= len(text) // 1000
    assert "".join(text[g.slices[0].start : g.slices[0].end] for g in pieces) == text
    for g in pieces:
        assert len(lines(units, g)) <= 1000
    # Cuts land after a newline where one is near the end of the budget.
    assert all(text[: g.slices[0].end].endswith("\n") for g in pieces[:-1])
    # No part of the split message is carried: the message after it starts afresh.
    assert groups[0].slices == (groups[0].slices[0],) and not groups[0].split
    assert groups[-1].carried == 0 and groups[-1].messages == range(2, 3)


def test_split_message_without_spaces_or_newlines_and_with_emoji() -> None:
    text = "记忆🎉👨‍👩‍👧" * 500
    units = [Unit(text, "user: ")]
    groups = check(units, GroupingConfig(content_length=64), Windower(64, 0))
    assert all(g.split and len(lines(units, g)) <= 64 for g in groups)
    assert "".join(text[g.slices[0].start : g.slices[0].end] for g in groups) == text


def test_multi_part_message_split_keeps_parts_apart() -> None:
    parts = ["alpha " * 30, "", "beta " * 30, "gamma"]
    units = chat([("user: ", parts, True)])
    groups = check(units, GroupingConfig(content_length=100), Windower(64, 0))
    assert all(g.split for g in groups)
    for g in groups:
        assert len(lines(units, g)) <= 100


def test_long_prefix_is_left_out_of_split_pieces() -> None:
    prefix = "user: [" + "a very long chat time " * 5 + "]: "
    units = [Unit("word " * 100, prefix)]
    groups = check(units, GroupingConfig(content_length=64), Windower(64, 0))
    assert all(s.prefix == "" for g in groups for s in g.slices)


def test_session_message_over_the_token_budget_is_split_by_tokens() -> None:
    big = "I went to the park and saw a squirrel. " * 200
    units = chat([("user: ", [f"m{i}"], True) for i in range(3)] + [("user: ", [big], True)])
    windower = Windower(128, 32)
    nested = windows_by_group(units, GroupingConfig(chunk_by="session", chunk_session=4), windower)
    assert len(nested) == 1 and len(nested[0]) > 1
    pieces = [s for s in flat(nested[0]) if s.unit == 3]
    assert len(pieces) > 1
    assert "".join(big[s.start : s.end] for s in pieces) == big
    assert all(w.tokens <= 128 for w in nested[0])


def test_a_large_overlap_never_reads_a_message_more_than_twice() -> None:
    # 1,500 short messages with an overlap of 1,000 messages: once 2,732 groups (121 times the
    # text); now every message is read at most twice.
    units = chat([("user: ", [f"short message {i}"], True) for i in range(1500)])
    config = GroupingConfig(chunk_by="content_length", content_length=4000, chunk_overlap=1000)
    groups = plan_groups(units, config)
    read = sum(len(lines(units, g)) for g in groups)
    text = len(lines(units, MessageGroup(tuple(_whole(units, range(len(units)))), 0, range(0))))
    assert read <= 2 * text
    single = plan_groups(units, GroupingConfig(chunk_by="content_length", content_length=4000))
    assert len(groups) <= 2 * len(single) + 1


def test_session_overlap_is_whole_messages() -> None:
    units = chat([("user: ", [f"message {i}", f"part two of {i}"], True) for i in range(10)])
    config = GroupingConfig(chunk_by="session", chunk_session=4, chunk_overlap=2)
    windows = group_windows(units, config, Windower(1024, 0))
    assert [w.carried for w in windows] == [0, 4, 4, 4]
    assert windows[1].segments[:4] == windows[0].segments[-4:]
    assert windows[-1].segments[-1].unit == len(units) - 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"chunk_by": "session", "chunk_session": 20, "chunk_overlap": 20},
            "invalid GroupingConfig: (root): Value error, chunk_overlap (20) must be at most half "
            "of chunk_session (20): no group would bring a new message",
        ),
        (
            {"chunk_by": "session", "chunk_session": 3, "chunk_overlap": 5},
            "invalid GroupingConfig: (root): Value error, chunk_overlap (5) must be at most half "
            "of chunk_session (3): no group would bring a new message",
        ),
        (
            {"chunk_by": "session", "chunk_session": 200, "chunk_overlap": 199},
            "invalid GroupingConfig: (root): Value error, chunk_overlap (199) must be at most "
            "half of chunk_session (200): it would read every message up to 200 times",
        ),
        (
            {"chunk_overlap": -1},
            "invalid GroupingConfig: chunk_overlap: Input should be greater than or equal to 0",
        ),
        (
            {"chunk_session": 0},
            "invalid GroupingConfig: chunk_session: Input should be greater than or equal to 1",
        ),
        (
            {"content_length": 0},
            "invalid GroupingConfig: content_length: Input should be greater than or equal to 64",
        ),
        (
            {"content_length": 63},
            "invalid GroupingConfig: content_length: Input should be greater than or equal to 64",
        ),
        (
            {"chunk_by": "tokens"},
            "invalid GroupingConfig: chunk_by: Input should be 'content_length' or 'session'",
        ),
        # The strategy reader's config always took integral numbers (100.0, true) as integers;
        # GroupingConfig is that config now, so only what is no integer is refused.
        (
            {"content_length": 100.5},
            "invalid GroupingConfig: content_length: Input should be a valid integer, got a "
            "number with a fractional part",
        ),
        (
            {"chunk_overlap": "two"},
            "invalid GroupingConfig: chunk_overlap: Input should be a valid integer, unable to "
            "parse string as an integer",
        ),
    ],
)
def test_invalid_configs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        GroupingConfig(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_overlap_may_equal_group_size_in_content_mode() -> None:
    # Only session mode ties the overlap to a size; content mode carries what fits.
    config = GroupingConfig(content_length=64, chunk_overlap=50)
    units = [Unit(f"message {i}", "user: ") for i in range(20)]
    check(units, config, Windower(64, 0))


class CountingTokenizer(Tokenizer):
    """Counts how many characters are tokenised, to check that grouping is linear."""

    def __init__(self) -> None:
        super().__init__(TOKENIZER.encoding, TOKENIZER.name)
        self.characters = 0

    def encode(self, text: str) -> list[int]:
        self.characters += len(text)
        return super().encode(text)

    def count(self, text: str) -> int:
        self.characters += len(text)
        return super().count(text)


@pytest.mark.parametrize("chunk_by", ["content_length", "session"])
@pytest.mark.parametrize("size", [200, 2000])
def test_grouping_tokenises_each_character_a_bounded_number_of_times(
    chunk_by: GroupBy, size: int
) -> None:
    tokenizer = CountingTokenizer()
    windower = Windower(256, 64, tokenizer)
    units = [
        Unit(f"I went to the park on day {i} and saw a squirrel. " * 3, "user: [2023-04-27]: ")
        for i in range(size)
    ]
    total = sum(len(u.prefix) + len(u.text) for u in units)
    config = GroupingConfig(chunk_by=chunk_by, chunk_overlap=2)
    windows = group_windows(units, config, windower)
    assert windows
    # Each group's units segmented and the group counted, a group over budget once more by
    # the windower, and a unit in up to (overlap + 1) groups: a constant multiple, not n².
    assert tokenizer.characters <= 12 * total
