"""Windowing invariants: budget, coverage, exact spans, overlap, character boundaries, linearity."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError
from memreader.windowing.chunking import RecursiveSplitter
from memreader.windowing.tokens import Tokenizer, get_tokenizer
from memreader.windowing.windows import Unit, Window, Windower

TOKENIZER = get_tokenizer()

# Text that stresses BPE and UTF-8: ASCII words, digits, punctuation, CJK, emoji, accents.
alphabet = st.sampled_from(
    list("abcdefghij klmnop qrst uvwxyz 0123456789 .,;:!?'\"()-_\n\t")
    + list("你好世界记忆测试中文字符")
    + ["🎉", "👍🏽", "👨‍👩‍👧", "é", "ß", "ॐ", "한", "ü", "\u200d", "  ", "'s", "\r\n"]
)
texts = st.lists(alphabet, min_size=0, max_size=400).map("".join)
prefixes = st.sampled_from(
    ["", "user: ", "assistant: [2023-04-27]: ", "tool: [1:56 pm on 8 May, 2023]: "]
)
units_strategy = st.lists(st.builds(Unit, text=texts, prefix=prefixes), min_size=1, max_size=12)


@st.composite
def budgets(draw: st.DrawFn) -> tuple[int, int]:
    max_tokens = draw(st.integers(64, 300))
    overlap = draw(st.integers(0, max_tokens // 2))
    return max_tokens, overlap


def check_windows(windower: Windower, units: list[Unit], windows: list[Window]) -> None:
    max_tokens, overlap = windower.max_tokens, windower.overlap_tokens
    covered: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(units))}
    for k, window in enumerate(windows):
        assert window.index == k
        real = TOKENIZER.count(window.text)
        assert real <= max_tokens, f"window {k} has {real} tokens > {max_tokens}"
        assert window.tokens == real, "Window.tokens is the exact count of its text"
        assert window.carried < len(window.segments), "every window brings new text"
        for segment in window.segments:
            unit = units[segment.unit]
            piece = unit.text[segment.start : segment.end]
            assert segment.line.endswith(piece)
            assert segment.line in (unit.prefix + piece, piece)
            assert "\ufffd" not in segment.line
        for segment in window.segments[window.carried :]:
            covered[segment.unit].append((segment.start, segment.end))
        if k > 0:
            previous = windows[k - 1]
            assert window.carried_tokens <= overlap
            carried = window.segments[: window.carried]
            tail = previous.segments[len(previous.segments) - len(carried) :] if carried else ()
            for mine, theirs in zip(carried, tail, strict=True):
                # A carried segment is a previous segment or a suffix of it.
                assert mine.unit == theirs.unit and mine.end == theirs.end
                assert theirs.start <= mine.start
            if carried:
                assert carried[1:] == tail[1:]
    for i, unit in enumerate(units):
        spans = sorted(covered[i])
        # New segments tile each unit exactly: no gap, no repeat.
        position = 0
        for start, end in spans:
            assert start == position
            position = end
        assert position == len(unit.text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=units_strategy, budget=budgets(), recursive=st.booleans())
def test_window_invariants(units: list[Unit], budget: tuple[int, int], recursive: bool) -> None:
    windower = Windower(*budget, splitter=SPLITTER if recursive else None)
    windows = windower.windows(units)
    check_windows(windower, units, windows)


SPLITTER = RecursiveSplitter()


@settings(max_examples=60, deadline=None)
@given(
    text=st.lists(alphabet, min_size=200, max_size=3000).map("".join),
    max_tokens=st.integers(64, 200),
    prefix=prefixes,
    recursive=st.booleans(),
)
def test_oversize_unit_is_split_at_character_boundaries(
    text: str, max_tokens: int, prefix: str, recursive: bool
) -> None:
    windower = Windower(max_tokens, max_tokens // 4, splitter=SPLITTER if recursive else None)
    units = [Unit(text, prefix)]
    windows = windower.windows(units)
    check_windows(windower, units, windows)
    if TOKENIZER.count(prefix + text) > windower.max_line_tokens:
        assert len(windows) > 1


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "beta", "记忆", "🎉", "gamma", "delta", "x1"]),
        min_size=50,
        max_size=600,
    ),
    max_tokens=st.integers(64, 160),
    overlap_share=st.floats(0.05, 0.5),
)
def test_overlap_is_what_was_configured(
    words: list[str], max_tokens: int, overlap_share: float
) -> None:
    overlap = int(max_tokens * overlap_share)
    windower = Windower(max_tokens, overlap)
    units = [Unit(" ".join(words[i : i + 7]), "user: ") for i in range(0, len(words), 7)]
    windows = windower.windows(units)
    check_windows(windower, units, windows)
    slack = 3 + 4  # a re-rendered line prefix and newline, plus one multi-token character
    for previous, window in itertools.pairwise(windows):
        if previous.tokens >= overlap + slack:
            assert overlap - slack <= window.carried_tokens <= overlap


def test_no_overlap_means_disjoint_windows() -> None:
    windower = Windower(64, 0)
    units = [Unit(f"message number {i} " * 5, "user: ") for i in range(30)]
    windows = windower.windows(units)
    assert all(w.carried == 0 for w in windows)
    assert sum(len(w.segments) for w in windows) == 30


def test_cjk_and_emoji_pieces_never_split_a_character() -> None:
    text = "记忆测试🎉👨‍👩‍👧" * 400
    windower = Windower(64, 16)
    windows = windower.windows([Unit(text, "user: ")])
    pieces = [s for w in windows for s in w.segments[w.carried :]]
    assert "".join(text[s.start : s.end] for s in pieces) == text
    for w in windows:
        assert "\ufffd" not in w.text
        assert TOKENIZER.count(w.text) <= 64


def test_long_prefix_is_dropped_rather_than_starving_text() -> None:
    windower = Windower(64, 8)
    prefix = "user: [" + "🎉" * 40 + "]: "
    windows = windower.windows([Unit("hello " * 50, prefix)])
    assert all(TOKENIZER.count(w.text) <= 64 for w in windows)
    assert all(not s.line.startswith("user") for w in windows for s in w.segments)


def test_empty_input_and_empty_text() -> None:
    windower = Windower(64, 8)
    assert windower.windows([]) == []
    windows = windower.windows([Unit("", "user: "), Unit("", "assistant: ")])
    assert len(windows) == 1
    assert windows[0].text == "user: \nassistant: "


@pytest.mark.parametrize(("max_tokens", "overlap"), [(10, 0), (63, 0), (100, 51), (100, -1)])
def test_bad_budgets_are_config_errors(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        Windower(max_tokens, overlap)


class CountingTokenizer(Tokenizer):
    """Counts how many characters are tokenised, to check that windowing is linear."""

    def __init__(self) -> None:
        super().__init__(TOKENIZER.encoding, TOKENIZER.name)
        self.characters = 0

    def encode(self, text: str) -> list[int]:
        self.characters += len(text)
        return super().encode(text)

    def count(self, text: str) -> int:
        self.characters += len(text)
        return super().count(text)


@pytest.mark.parametrize("size", [200, 2000])
def test_windowing_tokenises_each_character_a_bounded_number_of_times(size: int) -> None:
    tokenizer = CountingTokenizer()
    windower = Windower(256, 64, tokenizer)
    units = [
        Unit(f"I went to the park on day {i} and saw a squirrel. " * 3, "user: [2023-04-27]: ")
        for i in range(size)
    ]
    total = sum(len(u.text) for u in units)
    windower.windows(units)
    # Once for each unit, plus the overlap tails (a few times the overlap per window).
    assert tokenizer.characters <= 2.0 * total


def test_oversize_message_is_tokenised_a_bounded_number_of_times() -> None:
    tokenizer = CountingTokenizer()
    windower = Windower(128, 32, tokenizer)
    text = "word " * 50_000
    windower.windows([Unit(text, "user: ")])
    # Counted, cut, each piece checked, each window checked, overlap tails: a fixed multiple.
    assert tokenizer.characters <= 6 * len(text)


def test_tokenizer_is_offline_cl100k() -> None:
    # cl100k ids: "hello world" is [15339, 1917].
    assert TOKENIZER.encode("hello world") == [15339, 1917]
    with pytest.raises(ConfigError):
        get_tokenizer("o200k_base")


def test_recursive_splitter_cuts_long_documents_at_paragraphs() -> None:
    paragraphs = [
        f"Paragraph {i}. " + "The tea was steamed and rolled by hand. " * 12 for i in range(12)
    ]
    text = "\n\n".join(paragraphs)
    windower = Windower(256, 32, splitter=SPLITTER)
    windows = windower.windows([Unit(text)])
    check_windows(windower, [Unit(text)], windows)
    pieces = [s for w in windows for s in w.segments[w.carried :]]
    assert len(pieces) > 1
    # Every cut but the last lands right after a paragraph break.
    assert all(text[: s.end].endswith("\n\n") for s in pieces[:-1])
    plain = [s for w in Windower(256, 32).windows([Unit(text)]) for s in w.segments[w.carried :]]
    assert not all(text[: s.end].endswith("\n\n") for s in plain[:-1]), (
        "token cuts ignore paragraphs"
    )


SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|endofprompt|>",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(
        st.one_of(st.lists(alphabet, max_size=30).map("".join), st.sampled_from(SPECIAL_TOKENS)),
        min_size=20,
        max_size=400,
    ),
    max_tokens=st.integers(64, 160),
    prefix=prefixes,
    recursive=st.booleans(),
)
def test_special_token_text_is_ordinary_text(
    pieces: list[str], max_tokens: int, prefix: str, recursive: bool
) -> None:
    # tiktoken's plain encode refuses these strings; chonkie used to call it on oversize text.
    text = "".join(pieces)
    windower = Windower(max_tokens, max_tokens // 4, splitter=SPLITTER if recursive else None)
    units = [Unit(text, prefix), Unit(SPECIAL_TOKENS[0] * 3, prefix)]
    check_windows(windower, units, windower.windows(units))


def test_recursive_splitter_accepts_special_token_text() -> None:
    text = "Some words. <|endoftext|> More words. <|fim_prefix|>\n\n" * 200
    ends = SPLITTER(text, 64)
    assert ends and ends[-1] == len(text)
