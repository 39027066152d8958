"""The default ``local`` embedder (ONNX Runtime) against its reference, and what it promises.

- its vectors are the ``sentence_transformers`` backend's (fp32: the same; int8: close), on
  realistic English texts short and long, and MemoryBank retrieval is as good;
- pieces of a long text cover it exactly once, and ``embed_fragments`` is ``embed`` of the joined
  text (whole when it fits; the token-weighted mean of its pieces otherwise), embedding a part
  shared by two texts once;
- fast mode's window parts (:func:`memreader.windowing.provenance.window_embedding_fragments`)
  rebuild each window;
- a missing or corrupt model file is an error that says how to rebuild it;
- the default reader never imports torch, transformers or sentence-transformers.

Tests that load a model are marked ``slow``. The ONNX files come from the user cache
(``make install`` builds them; the first use builds them otherwise); tests that need an empty or
a damaged cache use a temporary ``MEMREADER_CACHE_DIR``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memreader import SimpleStructMemReader
from memreader.embedders import LocalEmbedder, build_embedder
from memreader.embedders import local as local_module
from memreader.embedders.local import BUNDLED_MODEL_NAME, bundled_model_path
from memreader.embedders.model_files import build_model_files, model_folder
from memreader.embedders.tokenized import TokenizedEmbedder
from memreader.errors import EmbeddingError
from memreader.scenes.scene import normalize_chat
from memreader.windowing.parsers import scene_units
from memreader.windowing.provenance import window_embedding_fragments
from memreader.windowing.windows import SEPARATOR, Window, Windower

ROOT = Path(__file__).resolve().parents[2]

REFERENCE: dict[str, Any] = {"backend": "sentence_transformers"}


def _local(precision: str = "fp32", **config: Any) -> LocalEmbedder:
    """A new embedder (its own recent-pieces memory; the ONNX session is shared)."""
    embedder = build_embedder({"backend": "local", "config": {"precision": precision, **config}})
    assert isinstance(embedder, LocalEmbedder)
    return embedder


@pytest.fixture(scope="module")
def reference() -> TokenizedEmbedder:
    embedder = build_embedder(REFERENCE)
    assert isinstance(embedder, TokenizedEmbedder)
    return embedder


# -- vectors: local fp32 and int8 against sentence-transformers ------------------------------------

SHORT_TEXTS = [
    "Hello, my name is Emily. Nice to meet you.",
    "I really enjoy painting, playing the piano and tasting different kinds of tea.",
    "Can you recommend a good book about the history of jazz?",
    "The meeting moved to Thursday at 3 pm because Sarah is flying back from Berlin.",
    "My daughter starts kindergarten next week and I'm more nervous than she is.",
    "Remind me to call the dentist tomorrow morning to reschedule my appointment.",
    "We adopted a rescue dog named Biscuit last spring; he's terrified of thunderstorms.",
    "I've been trying to run three times a week, but my knee has been bothering me lately.",
    "What's the difference between a Roth IRA and a traditional 401(k)?",
    "Honestly, the new office is great, except the coffee machine is always broken.",
    "I'm allergic to peanuts and shellfish, so please keep that in mind for recipes.",
    "Our flight to Lisbon leaves at 6:45 a.m. on May 12th, gate B17.",
    "Thanks! That's exactly what I needed.",
    "I finished reading 'Pride and Prejudice' and loved Elizabeth's wit.",
]

LONG_TEXTS = [
    # Each is longer than one pass of the model (256 wordpieces with [CLS] and [SEP]).
    "user: I wanted to tell you about my weekend, because it was one of the best I've had in a "
    "long time. On Saturday morning my sister and I drove up to the lake house that our "
    "grandparents built in the seventies. The road was still muddy from the rain, and we had "
    "to stop twice to move fallen branches. When we finally arrived, the house smelled of pine "
    "and old books, exactly as I remembered it. We spent the afternoon cleaning the porch, "
    "fixing the screen door and going through boxes of photographs. There were pictures of my "
    "mother as a teenager holding a fish that was almost as big as she was, and letters my "
    "grandfather wrote to my grandmother when he was stationed overseas. In the evening we "
    "made a fire, grilled vegetables and talked until almost two in the morning about our "
    "childhood, about our parents getting older, and about whether we should keep the house "
    "or sell it. My sister thinks we can't afford the property taxes anymore, but I feel like "
    "selling it would mean losing a piece of our family. On Sunday we went kayaking across "
    "the lake, saw a heron standing perfectly still in the reeds, and had lunch at the little "
    "diner in town where the owner still remembered our names. Driving home, neither of us "
    "said much, but I think we both knew we need to decide soon. What would you do?",
    "assistant: Here is a summary of the project status you asked for. The migration of the "
    "billing service to the new database cluster is about eighty percent complete. The "
    "customer and invoice tables have been copied and verified, and the nightly "
    "reconciliation job now runs against the new cluster without errors. The remaining work "
    "is the payments history table, which holds about four hundred million rows and cannot "
    "be copied during business hours without slowing down checkout. The team proposes to "
    "copy it in batches over three weekends, starting on the fourteenth, with a rollback "
    "plan that keeps the old cluster in read-only mode for two weeks afterwards. The main "
    "risks are the foreign keys between payments and refunds, which were never enforced in "
    "the old schema and contain roughly twelve thousand orphaned records, and the reporting "
    "dashboards maintained by the finance department, which query the old cluster directly. "
    "Finance has agreed to switch their dashboards by the end of the month, but they need a "
    "read replica with the same column names. The budget is on track: we have spent 61 "
    "percent of the allocated funds, mostly on the new hardware and the consultants who "
    "reviewed the indexing strategy. The next milestone review is scheduled for Friday; "
    "please let me know if you want the risk register and the detailed timeline attached, "
    "and whether the finance team should join the review as well.",
    "user: I've been struggling with sleep for a few months now and I'd like some advice. "
    "Usually I go to bed around eleven, but I lie awake for an hour or more thinking about "
    "work, and then I wake up at four or five and can't fall asleep again. I drink two cups "
    "of coffee in the morning and sometimes a third one after lunch when I feel tired. I "
    "stopped exercising in the winter because it gets dark so early, and I often look at my "
    "phone in bed, mostly reading the news or answering messages from colleagues in other "
    "time zones. My doctor said my blood tests are normal and suggested I try to keep a sleep "
    "diary, but I keep forgetting to fill it in. On weekends I sleep until nine or ten to "
    "catch up, which probably doesn't help. I've tried melatonin a few times and it made me "
    "feel groggy the next morning. My partner snores a little, but I don't think that is the "
    "main problem. I would really prefer not to take sleeping pills. Is there a routine you "
    "would recommend, and how long does it usually take before changes like cutting caffeine "
    "or going to bed at the same time every night start to make a difference? Also, is it "
    "true that reading a paper book is better than reading on a tablet before sleeping?",
    "The history of the city's public library goes back to 1874, when a group of merchants "
    "donated their private collections and rented two rooms above a hardware store on Main "
    "Street. Within a decade the collection had outgrown the rooms, and a fundraising "
    "campaign led by schoolteachers and the local newspaper paid for a red brick building "
    "near the river. The library survived a flood in 1913 that destroyed nearly a third of "
    "its books, and volunteers spent the following summer drying pages on clotheslines "
    "strung across the reading room. During the Depression it became a refuge for "
    "unemployed workers, who used its newspapers to look for jobs and its classrooms to "
    "learn typing and bookkeeping. A new wing was added in 1958 with a children's room, a "
    "music collection and one of the first microfilm readers in the region. In the 1990s "
    "the library was among the first in the state to offer public internet access, and "
    "long lines formed every afternoon for the four computers by the entrance. Today it "
    "lends e-books, musical instruments and gardening tools, hosts citizenship classes and "
    "a weekly chess club, and employs forty people. The original brick building still "
    "stands; it houses the local history archive, where researchers can read the "
    "handwritten minutes of the founders' first meeting and the ledger of the first loans, "
    "which lists a copy of Robinson Crusoe that was returned eleven years late.",
    "user: [2023-05-02]: Today was rough. I had my performance review and my manager said I "
    "need to be more visible in meetings, which is hard for me because I'm an introvert and I "
    "prefer to think before I speak.\n"
    "assistant: [2023-05-02]: That sounds frustrating, especially if your work itself is "
    "strong. Being visible doesn't have to mean talking the most. You could send a short "
    "written summary before meetings, or ask one prepared question in each discussion.\n"
    "user: [2023-05-02]: That's a good idea. She also mentioned I should mentor the new "
    "hire, Tom, who joined from a startup and is very enthusiastic but keeps skipping tests.\n"
    "assistant: [2023-05-02]: Mentoring is a great way to show leadership quietly. You "
    "could pair with Tom on his next feature and explain why the tests matter by showing a "
    "bug they caught in the past, rather than making it a rule he has to follow.\n"
    "user: [2023-05-02]: I like that. Oh, and the company is moving to a hybrid schedule in "
    "June: three days in the office, two at home. I'm worried about the commute, it's an "
    "hour each way by train.\n"
    "assistant: [2023-05-02]: An hour on the train can become useful time: reading, "
    "planning your week, or simply resting. You might also ask whether your team can choose "
    "the same office days, so the commute is worth it for meetings and collaboration.",
    "Recipe notes for the family dinner on Sunday. Start the lamb shoulder the night before: "
    "rub it with crushed garlic, rosemary, lemon zest, salt and olive oil, wrap it and leave "
    "it in the fridge. On Sunday take it out two hours before cooking so it reaches room "
    "temperature. Roast it at 160 degrees for about four hours on a bed of sliced onions and "
    "carrots, adding a glass of white wine and a glass of water after the first hour, and "
    "basting every forty-five minutes. For the vegetarian guests, make the stuffed peppers: "
    "cook the rice with cumin and a pinch of saffron, mix it with chickpeas, chopped "
    "tomatoes, feta, parsley and toasted pine nuts, fill the peppers and bake them for "
    "forty minutes alongside the lamb. Grandma cannot eat gluten, so use cornstarch instead "
    "of flour to thicken the gravy and buy the gluten-free bread from the bakery on Elm "
    "Street. Uncle Peter is bringing dessert, probably his famous apple crumble, so we only "
    "need vanilla ice cream and cream. Set the table for twelve, with the children at the "
    "small table by the window. Remember to take the extra chairs from the garage and wash "
    "the big serving platter, which hasn't been used since Christmas. Dinner at six sharp.",
]

TEXTS = SHORT_TEXTS + LONG_TEXTS


def _cosines(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Any:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (x * y).sum(axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))


@pytest.mark.slow
def test_the_texts_are_short_and_long(reference: TokenizedEmbedder) -> None:
    assert len(TEXTS) == 20
    assert all(reference.count_tokens(text) < 40 for text in SHORT_TEXTS)
    assert all(reference.count_tokens(text) > 260 for text in LONG_TEXTS)
    assert all(len(reference.split_text(text)) == 2 for text in LONG_TEXTS)


@pytest.mark.slow
def test_fp32_vectors_are_the_reference_vectors(reference: TokenizedEmbedder) -> None:
    expected = reference.embed(TEXTS)
    got = _local("fp32").embed(TEXTS)
    cosines = _cosines(got, expected)
    assert cosines.min() >= 0.9999, dict(zip(TEXTS, cosines.round(6), strict=True))
    assert np.abs(np.asarray(got) - np.asarray(expected)).max() < 1e-4


@pytest.mark.slow
def test_int8_vectors_are_close_to_the_reference_vectors(reference: TokenizedEmbedder) -> None:
    expected = reference.embed(TEXTS)
    embedder = _local("int8")
    assert embedder.precision == "int8", "the int8 check passed on this CPU"
    cosines = _cosines(embedder.embed(TEXTS), expected)
    # Measured (onnxruntime 1.32, scheme s7: 7-bit weights, fp32 down-projections): min 0.986,
    # mean 0.996 on AVX-512 VNNI. The old full-range file gave 0.27 / 0.72 on an AVX2 CPU
    # without VNNI (its kernel saturates), which this test caught; short texts of common words
    # lose the most to quantisation.
    assert cosines.min() >= 0.975, dict(zip(TEXTS, cosines.round(4), strict=True))
    assert cosines.mean() >= 0.99, cosines.mean()


@pytest.mark.slow
def test_backend_names() -> None:
    # fp32 gives the reference's vectors, so it shares its name (and cache namespace); int8 not.
    assert _local("fp32").name == f"local:{BUNDLED_MODEL_NAME}"
    assert _local("int8").name == f"local:{BUNDLED_MODEL_NAME}:int8"
    assert _local("int8", normalize=False).name == f"local:{BUNDLED_MODEL_NAME}:int8:unnormalized"
    default = build_embedder({})
    assert isinstance(default, LocalEmbedder) and default.config.precision == "int8"


# -- retrieval on MemoryBank -----------------------------------------------------------------------


def _retrieval_module() -> ModuleType:
    """``benchmarks/retrieval.py``, loaded from its file (``benchmarks`` is not a package)."""
    path = ROOT / "benchmarks" / "retrieval.py"
    spec = importlib.util.spec_from_file_location("memreader_benchmarks_retrieval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recall(config: dict[str, Any]) -> dict[str, Any]:
    """MemoryBank recall in the day layout without prefixes (the reader's default): each day is
    read as its own scene (149 windows), the first user message of each day is the query."""
    started = time.perf_counter()
    row: dict[str, Any] = _retrieval_module().memorybank_recall(
        config, layout="day", embed_prefixes=False
    )
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


@pytest.fixture(scope="module")
def reference_recall(reference: TokenizedEmbedder) -> dict[str, Any]:
    return _recall(REFERENCE)


@pytest.mark.slow
def test_memorybank_recall_matches_the_reference(reference_recall: dict[str, Any]) -> None:
    # Measured: recall@5 0.8591 for the reference and fp32, 0.8523 for int8 (one query less).
    # fp32 is not run here: its vectors equal the reference's (test above), so its recall does.
    want = reference_recall
    got = _recall({"backend": "local", "config": {"precision": "int8"}})
    rows = {"reference": want, "int8": got}
    assert want["queries"] == got["queries"] == 149 and want["recall@5"] > 0.8, rows
    assert got["windows"] == want["windows"], rows
    assert abs(got["recall@5"] - want["recall@5"]) <= 0.01, rows


# -- pieces of a long text -------------------------------------------------------------------------

# Words as a chat has them, and text that stresses the wordpiece tokenizer: accents (stripped by
# the model's normaliser), CJK (one token per character), emoji ([UNK]), digits, punctuation.
WORDS = st.sampled_from(
    [
        "the", "a", "meeting", "tomorrow", "Emily's", "re-schedule", "3pm", "2023-04-27",
        "café", "naïve", "Grüße", "記憶", "你好世界", "🎉", "👍🏽", "(ok)", "...", "?!", "x" * 30,
        "antidisestablishmentarianism", "e-mail:", "$12.50", "#tag", "\u00a0", "'s",
    ]
)  # fmt: skip
SPACES = st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", "\t", ", ", ". "])


@st.composite
def prose(draw: st.DrawFn, max_words: int = 160) -> str:
    words = draw(st.lists(WORDS, min_size=0, max_size=max_words))
    out = []
    for word in words:
        out.append(word)
        out.append(draw(SPACES))
    return "".join(out[:-1]) if draw(st.booleans()) else "".join(out)


@pytest.fixture(scope="module")
def small_budget() -> dict[int, LocalEmbedder]:
    """fp32 embedders reading at most ``n`` tokens a pass (``n - 2`` per piece)."""
    return {n: _local("fp32", max_input_tokens=n) for n in (8, 16, 40, 256)}


def _check_cover(embedder: LocalEmbedder, text: str) -> None:
    pieces = embedder.split_text(text)
    encoding = embedder.tokenizer.encode(text, add_special_tokens=False)
    assert "".join(piece.text for piece in pieces) == text
    position, first = 0, 0
    for piece in pieces:
        assert piece.start == position and text[piece.start : piece.end] == piece.text
        assert piece.tokens <= embedder.piece_budget
        assert piece.text or len(pieces) == 1
        # The piece is a slice of the text's one tokenisation: exactly its tokens.
        offsets = encoding.offsets[first : first + piece.tokens]
        assert all(piece.start <= start and end <= piece.end for start, end in offsets)
        position, first = piece.end, first + piece.tokens
    assert position == len(text) and first == len(encoding.ids)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=prose(), n=st.sampled_from([8, 16, 40, 256]))
def test_pieces_cover_a_long_text_once(
    small_budget: dict[int, LocalEmbedder], text: str, n: int
) -> None:
    embedder = small_budget[n]
    pieces = embedder.count_tokens(text) // embedder.piece_budget + 1
    event(f"{pieces if pieces < 3 else 'more'} pieces")
    _check_cover(embedder, text)


@pytest.mark.slow
def test_pieces_of_the_long_texts(small_budget: dict[int, LocalEmbedder]) -> None:
    for text in LONG_TEXTS:
        _check_cover(small_budget[256], text)
        _check_cover(small_budget[16], text)


# -- embed_fragments ---------------------------------------------------------------------------


def _weighted_mean(vectors: Any, weights: Sequence[int]) -> Any:
    mean = (np.asarray(vectors, dtype=np.float64) * np.asarray(weights)[:, None]).sum(axis=0)
    return mean / np.linalg.norm(mean)


@pytest.fixture(scope="module")
def two_embedders() -> tuple[LocalEmbedder, LocalEmbedder]:
    return _local("fp32"), _local("fp32")


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(prose(max_words=12), min_size=1, max_size=4),
    # "\x0c" and "\x85" are white space to Python that the model's normaliser deletes.
    breaks=st.lists(
        st.sampled_from(["\n", " ", "\t", "\r\n", "\u3000", "\x0c", "\x85"]), min_size=4, max_size=4
    ),
)
def test_parts_that_fit_are_the_whole_text(
    two_embedders: tuple[LocalEmbedder, LocalEmbedder], parts: list[str], breaks: list[str]
) -> None:
    # Parts meeting at white space, as fast mode's (lines ending in "\n"), within one pass.
    parts = [part + ("" if k == len(parts) - 1 else breaks[k]) for k, part in enumerate(parts)]
    text = "".join(parts)
    whole_embedder, parts_embedder = two_embedders
    if whole_embedder.count_tokens(text) > whole_embedder.piece_budget:
        event("longer than one pass")
        return
    (whole,) = whole_embedder.embed([text])
    # Pieces are remembered by their ids, so a piece this embedder embedded before for another
    # example is reused only when the ids are the same.
    before = parts_embedder.pieces_embedded + parts_embedder.pieces_shared
    (given_as_parts,) = parts_embedder.embed_fragments([parts])
    assert given_as_parts == pytest.approx(whole, abs=1e-5)
    assert parts_embedder.pieces_embedded + parts_embedder.pieces_shared == before + 1


@pytest.mark.slow
def test_parts_meeting_at_any_white_space_are_the_whole_text() -> None:
    # White space that the model's normaliser deletes (control characters Python calls space).
    for space in ("\n", " ", "\x0b", "\x0c", "\x1c", "\x85", "\u3000"):
        parts = [f"hello wor{space}", "ld again"]
        (whole,) = _local("fp32").embed(["".join(parts)])
        (given_as_parts,) = _local("fp32").embed_fragments([parts])
        assert given_as_parts == pytest.approx(whole, abs=1e-5), repr(space)


def _lines(text: str, width: int = 12) -> list[str]:
    words = text.split(" ")
    return [" ".join(words[i : i + width]) for i in range(0, len(words), width)]


@pytest.mark.slow
def test_a_long_text_given_as_parts_is_the_mean_of_their_pieces() -> None:
    # Three parts of a long window: the overlap with the previous one, its own lines, the
    # overlap with the next (each part within one pass, together longer).
    lines = _lines(LONG_TEXTS[0])
    parts = ["\n".join(lines[:6]) + "\n", "\n".join(lines[6:14]) + "\n", "\n".join(lines[14:])]
    text = "".join(parts)
    embedder = _local("fp32")
    assert embedder.count_tokens(text) > embedder.piece_budget
    assert all(embedder.count_tokens(part) <= embedder.piece_budget for part in parts)
    (got,) = embedder.embed_fragments([parts])
    part_vectors = _local("fp32").embed(parts)
    weights = [embedder.count_tokens(part) for part in parts]
    assert got == pytest.approx(_weighted_mean(part_vectors, weights), abs=1e-5)
    assert embedder.pieces_embedded == 3
    # Not the vector of the same text cut where embed() cuts it (about 254 tokens in).
    (cut_elsewhere,) = _local("fp32").embed([text])
    assert got != pytest.approx(cut_elsewhere, abs=1e-5)


@pytest.mark.slow
def test_a_part_longer_than_a_pass_is_cut_within() -> None:
    long_part = LONG_TEXTS[3] + "\n"
    parts = ["An overlap line with the previous window.\n", long_part, "The last line."]
    embedder = _local("fp32")
    (got,) = embedder.embed_fragments([parts])
    cut = embedder.split_text(long_part)
    assert len(cut) == 2
    pieces = [parts[0], *(piece.text for piece in cut), parts[2]]
    vectors = _local("fp32").embed(pieces)
    weights = [
        embedder.count_tokens(parts[0]),
        *(p.tokens for p in cut),
        embedder.count_tokens(parts[2]),
    ]
    assert got == pytest.approx(_weighted_mean(vectors, weights), abs=1e-5)


@pytest.mark.slow
def test_a_part_two_texts_share_is_embedded_once() -> None:
    lines = _lines(LONG_TEXTS[1]) + _lines(LONG_TEXTS[2])
    own_a, shared, own_b = (
        "\n".join(lines[:10]) + "\n",
        "\n".join(lines[10:20]) + "\n",
        "\n".join(lines[20:30]),
    )
    a, b = [own_a, shared], [shared, own_b]
    embedder = _local("fp32")
    assert embedder.count_tokens("".join(a)) > embedder.piece_budget
    assert embedder.count_tokens("".join(b)) > embedder.piece_budget
    vector_a, vector_b = embedder.embed_fragments([a, b])
    assert embedder.pieces_embedded == 3 and embedder.pieces_shared == 1
    assert vector_a == pytest.approx(_local("fp32").embed_fragments([a])[0], abs=1e-5)
    assert vector_b == pytest.approx(_local("fp32").embed_fragments([b])[0], abs=1e-5)
    # Across calls too (consecutive batches of windows): the shared part is not embedded again.
    later = _local("fp32")
    later.embed_fragments([a])
    before = later.pieces_embedded, later.pieces_shared, later.tokens_embedded
    (again_b,) = later.embed_fragments([b])
    assert later.pieces_embedded == before[0] + 1 and later.pieces_shared == before[1] + 1
    assert later.tokens_embedded == before[2] + later.count_tokens(own_b) + later.special_tokens
    assert again_b == pytest.approx(vector_b, abs=1e-5)


# -- fast mode's window parts ----------------------------------------------------------------------

LINE_WORDS = st.sampled_from(
    ["I", "we", "met", "Anna", "today", "at", "the", "café", "記憶", "🎉", "ok.", "3pm", "and"]
)
CONTENTS = st.lists(
    st.tuples(LINE_WORDS, st.sampled_from([" ", " ", " ", "\n", "  "])), max_size=20
).map(lambda words: "".join(w + s for w, s in words).rstrip(" "))
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": CONTENTS},
        optional={"chat_time": st.sampled_from(["2023-04-27", "1:56 pm on 8 May, 2023"])},
    ),
    min_size=4,
    max_size=50,
)


def _shared_lines(before: Window, after: Window) -> int:
    """How many whole lines at the start of ``after`` are the last lines of ``before``."""
    carried = after.segments[: after.carried]
    n = len(carried)
    while n and tuple(carried[len(carried) - n :]) != before.segments[len(before.segments) - n :]:
        n -= 1
    return n


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=MESSAGES,
    max_tokens=st.integers(64, 160),
    overlap_share=st.sampled_from([0.0, 0.25, 0.4, 0.5]),
)
def test_window_parts_rebuild_each_window(
    messages: list[dict[str, str]], max_tokens: int, overlap_share: float
) -> None:
    (scene,) = normalize_chat(messages)
    units = scene_units(scene)
    windows = Windower(max_tokens, int(max_tokens * overlap_share)).windows(units)
    for k, window in enumerate(windows):
        parts = window_embedding_fragments(windows, k, units, prefixes=True)
        assert "".join(parts) == window.text
        assert all(part.endswith(SEPARATOR) for part in parts[:-1])
        assert all(parts) or parts == ("",)
        bare = window_embedding_fragments(windows, k, units, prefixes=False)
        lines = [units[s.unit].text[s.start : s.end] for s in window.segments]
        assert "".join(bare) == SEPARATOR.join(lines)
        assert all(bare) or bare == ("",)
        if k + 1 == len(windows):
            continue
        following_bare = window_embedding_fragments(windows, k + 1, units, prefixes=False)
        nxt = windows[k + 1]
        if 0 < nxt.carried < len(nxt.segments):
            # Without prefixes the whole overlap is shared, a line carried in part included:
            # the next window's first part is the text it carries in, and this window's last
            # part is that text too, unless it would reach back into this window's first part.
            carried = SEPARATOR.join(
                units[s.unit].text[s.start : s.end] for s in nxt.segments[: nxt.carried]
            )
            assert following_bare[0] == carried + SEPARATOR
            text = SEPARATOR.join(lines)
            head = 0
            if k > 0 and 0 < window.carried < len(window.segments):
                head = len(SEPARATOR.join(lines[: window.carried])) + len(SEPARATOR)
            if carried and len(text) - len(carried) >= head:
                event("the overlap is shared whole")
                assert bare[-1] == carried
        n = _shared_lines(window, windows[k + 1])
        following = window_embedding_fragments(windows, k + 1, units, prefixes=True)
        event("whole lines shared with the next window" if n else "no whole line shared")
        if n == 0:
            continue
        # The window's last part is the overlap the next window begins with (whole lines),
        # or, where the overlap reaches back into the window's own first part, its end.
        shared = SEPARATOR.join(s.line for s in window.segments[-n:])
        assert shared + SEPARATOR in following
        assert shared.endswith(parts[-1])
        if len(parts[-1]) < len(shared):
            event("the overlap reaches into the previous overlap")
            assert n > len(window.segments) - window.carried


# -- model files: missing, corrupt, rebuilt --------------------------------------------------------


def _bundled_folder() -> Path:
    """The cache folder of the bundled model's ONNX files (under the current cache root)."""
    return model_folder(Path(bundled_model_path()), BUNDLED_MODEL_NAME)


@pytest.fixture
def user_folder() -> Path:
    """The bundled model's folder in the cache the tests run with (the user's, by default)."""
    return _bundled_folder()


@pytest.fixture
def empty_cache(
    user_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """An empty ``MEMREADER_CACHE_DIR`` and no loaded ONNX sessions (restored afterwards)."""
    monkeypatch.setenv("MEMREADER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local_module, "_SESSIONS", {})
    monkeypatch.setattr(local_module, "_CHECKS", {})
    yield tmp_path / "cache"


@pytest.mark.slow
def test_a_missing_model_without_auto_build_says_how_to_build(empty_cache: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"missing.*`memreader models build") as info:
        _local("int8", auto_build=False)
    assert str(empty_cache) in str(info.value)
    assert not empty_cache.exists()


@pytest.mark.slow
def test_a_cache_folder_that_cannot_be_written_is_a_typed_error(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = empty_cache.parent / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MEMREADER_CACHE_DIR", str(blocker))
    with pytest.raises(EmbeddingError, match=r"cannot write the model file.*MEMREADER_CACHE_DIR"):
        _local("fp32")
    reader = SimpleStructMemReader()
    with pytest.raises(EmbeddingError, match="MEMREADER_CACHE_DIR"):
        scene = [{"role": "user", "content": "hi"}]
        reader.get_memory([scene], type="chat", info={"user_id": "u", "session_id": "s"})


@pytest.mark.slow
def test_a_corrupt_model_is_refused_and_rebuilt(empty_cache: Path, user_folder: Path) -> None:
    # Copy the user's built fp32 file (or build it: about a second) into the temporary cache.
    source, folder = user_folder, _bundled_folder()
    assert folder != source and folder.is_relative_to(empty_cache)
    if (source / "model-fp32.onnx").is_file() and (source / "manifest.json").is_file():
        folder.mkdir(parents=True)
        shutil.copy(source / "manifest.json", folder / "manifest.json")
        shutil.copy(source / "model-fp32.onnx", folder / "model-fp32.onnx")
    build_model_files(Path(bundled_model_path()), BUNDLED_MODEL_NAME, ("fp32",))
    path = folder / "model-fp32.onnx"
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 16] = bytes(16)  # sixteen bytes of a weight zeroed
    path.write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match=r"corrupt.*`memreader models build --force`"):
        _local("fp32")
    with pytest.raises(EmbeddingError, match="corrupt"):
        _local("fp32", auto_build=False)  # auto_build never hides a damaged file
    # What the message says to run repairs it.
    from memreader.cli import main

    assert main(["models", "build", "--force", "--precision", "fp32"]) == 0
    (vector,) = _local("fp32", auto_build=False).embed(["I like tea."])
    assert len(vector) == 384
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["sha256"]) >= {"model-fp32.onnx"}


# -- the default path is light ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_default_reader_imports_no_torch() -> None:
    code = (
        "import sys, memreader\n"
        "r = memreader.SimpleStructMemReader()\n"
        "items = r.get_memory([[{'role': 'user', 'content': 'hi'}]], type='chat',\n"
        "                     info={'user_id': 'u', 'session_id': 's'})\n"
        "assert len(items[0][0].metadata.embedding) == 384\n"
        "heavy = ('torch', 'transformers', 'sentence_transformers')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


# -- a text's vector and its batch -----------------------------------------------------------------

BATCH = ["hello world", "I like tea.", LONG_TEXTS[4], "Thanks! That's exactly what I needed."]


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_texts_vector_does_not_depend_on_its_batch(precision: str) -> None:
    # int8 activations are quantised with one scale per tensor at run time, so in a batch a
    # text's vector would depend on its neighbours (cosine 0.976-0.994 to itself alone): the
    # int8 graph is run one sequence at a time.
    together = _local(precision).embed(BATCH)
    for text, vector in zip(BATCH, together, strict=True):
        assert _local(precision).embed([text])[0] == pytest.approx(vector, abs=1e-5)
    for got, want in zip(_local(precision, batch_size=2).embed(BATCH), together, strict=True):
        assert got == pytest.approx(want, abs=1e-5)


@pytest.mark.slow
def test_unreadable_share_of_a_text_just_embedded_is_the_same_without_tokenising_again() -> None:
    parts = ["我喜欢喝绿茶。\n", "I like green tea, naïve café ☕tea.\n", "还有乌龙茶"]
    text = "".join(parts)
    fresh = _local("int8").unreadable_share(text)
    embedder = _local("int8")
    embedder.embed_fragments([parts])
    assert embedder._recent_unknown.get(text) is not None, "remembered from the embedding"
    assert embedder.unreadable_share(text) == fresh
    assert fresh is not None and 0.2 < fresh < 0.6


@pytest.mark.slow
def test_text_the_tokenizer_refuses_is_a_typed_error() -> None:
    embedder = _local("int8")
    with pytest.raises(EmbeddingError, match="lone surrogate") as info:
        embedder.embed(["fine", "ok \ud800 x"])
    assert "lone surrogate '\\ud800' at character 3" in str(info.value)
    assert "(text 1 of 2)" in str(info.value)
    with pytest.raises(EmbeddingError, match="lone surrogate"):
        embedder.unreadable_share("\udfff")
    assert embedder.embed(["fine"])[0], "the embedder still works"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_model_folder_file_that_is_no_regular_file_is_refused_not_waited_on(
    name: str, tmp_path: Path, empty_cache: Path
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(bundled_model_path(), folder)
    (folder / name).unlink()
    os.mkfifo(folder / name)  # reading a FIFO with no writer would block forever
    with pytest.raises(EmbeddingError, match="not a regular file"):
        build_embedder({"backend": "local", "config": {"model_path": str(folder)}})


@pytest.mark.slow
def test_two_processes_building_different_precisions_keep_both_in_the_manifest(
    empty_cache: Path,
) -> None:
    env = {**os.environ, "MEMREADER_CACHE_DIR": str(empty_cache), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "memreader.cli", "models", "build", "--precision"]
    builds = [
        subprocess.Popen([*command, precision], env=env, stdout=subprocess.PIPE, text=True)
        for precision in ("int8", "fp32")
    ]
    for build in builds:
        assert build.wait(timeout=120) == 0
    folder = _bundled_folder()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(manifest["sha256"]) == ["model-fp32.onnx", "model-int8-s7.onnx"]
    for precision in ("fp32", "int8"):
        assert _local(precision, auto_build=False).embed(["tea"])[0]
