"""Valid but awkward text through the public API: special-token strings, lone surrogates,
messages without text. None of them may crash a call with an untyped error, and no source may
claim a span that does not slice its text back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.errors import (
    DocumentError,
    InputError,
    InvalidChatTimeError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
)
from memreader.items import TextualMemoryItem
from memreader.scenes.text_checks import check_nested_text, check_text
from memreader.windowing.tokens import get_tokenizer
from memreader.windowing.windows import Unit, Windower
from tests.common import INFO

SURROGATE = json.loads('"\\ud800"')  # what json.load gives for an unpaired escape
LONG = 400  # repetitions that make a message longer than one 64-token window


def make_reader(splitter: str = "recursive") -> SimpleStructMemReader:
    config = SimpleStructMemReaderConfig(
        embedder=None, window={"max_tokens": 64, "overlap_tokens": 8, "splitter": splitter}
    )
    return SimpleStructMemReader(config)


READERS = {"recursive": make_reader("recursive"), "tokens": make_reader("tokens")}


def assert_exact(scenes: list[list[dict[str, Any]]], result: list[list[TextualMemoryItem]]) -> None:
    """Every source with a span slices its message's (or part's) text back verbatim."""
    for scene, items in zip(scenes, result, strict=True):
        for item in items:
            for source in item.metadata.sources:
                if source.span is None:
                    assert source.type != "chat", "verbatim chat text always has a span"
                    continue
                content = scene[source.message_index]["content"]
                if source.part_index is not None:
                    content = content[source.part_index]
                    content = content if isinstance(content, str) else content["text"]
                assert isinstance(content, str)
                start, end = source.span
                assert content[start:end] == source.content


# -- special-token text ---------------------------------------------------------------------


@pytest.mark.parametrize("splitter", ["recursive", "tokens"])
@pytest.mark.parametrize("token", ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>"])
def test_special_token_text_in_long_messages_and_documents(splitter: str, token: str) -> None:
    reader = READERS[splitter]
    text = f"The tea was good. {token} We drank it at noon.\n\n" * 60
    scenes = [[{"role": "user", "content": text}, {"role": "assistant", "content": token}]]
    result = reader.get_memory(scenes, type="chat", info=INFO)
    assert len(result[0]) > 1
    assert_exact(scenes, result)
    covered = "".join(
        s.content for item in result[0] for s in item.metadata.sources if s.message_index == 0
    )
    assert token in covered
    [docs] = reader.get_memory([text], type="doc", info=INFO)
    assert len(docs) > 1
    for item in docs:
        for source in item.metadata.sources:
            assert source.span is not None
            assert text[source.span[0] : source.span[1]] == source.content
    tokenizer = get_tokenizer()
    assert all(tokenizer.count(item.memory) <= 64 for item in [*result[0], *docs])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(
        st.one_of(
            st.text(st.characters(codec="utf-8"), max_size=40),
            st.sampled_from(["<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "\n\n", ". "]),
        ),
        min_size=1,
        max_size=80,
    ),
    splitter=st.sampled_from(["recursive", "tokens"]),
)
def test_any_text_with_special_tokens_gives_exact_items(pieces: list[str], splitter: str) -> None:
    text = "".join(pieces)
    scenes = [[{"role": "user", "content": text}, {"role": "assistant", "content": text * 3}]]
    result = READERS[splitter].get_memory(scenes, type="chat", info=INFO)
    assert_exact(scenes, result)
    tokenizer = get_tokenizer()
    assert all(tokenizer.count(item.memory) <= 64 for item in result[0])


# -- lone surrogates ----------------------------------------------------------------------------


def chat(message: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [[{"role": "user", "content": "fine"}, message]]


@pytest.mark.parametrize("length", [1, LONG])
@pytest.mark.parametrize(
    ("scenes", "error", "where", "what"),
    [
        (
            chat({"role": "user", "content": "a" + SURROGATE}),
            InvalidMessageError,
            (0, 1, None),
            "content",
        ),
        (
            chat({"role": "user", "content": ["ok", {"type": "text", "text": SURROGATE}]}),
            InvalidMessageError,
            (0, 1, 1),
            "text",
        ),
        (chat({"role": "user", "content": [SURROGATE]}), InvalidMessageError, (0, 1, 0), "text"),
        (
            chat({"role": "user", "content": "x", "chat_time": SURROGATE}),
            InvalidChatTimeError,
            (0, 1, None),
            "chat_time",
        ),
        (
            chat({"role": "user", "content": "x", "name": SURROGATE}),
            InvalidMessageError,
            (0, 1, None),
            "name",
        ),
        (
            chat({"role": "user", "content": "x", "message_id": SURROGATE}),
            InvalidMessageError,
            (0, 1, None),
            "message_id",
        ),
        (
            chat({"role": "tool", "content": "x", "tool_call_id": SURROGATE}),
            InvalidMessageError,
            (0, 1, None),
            "tool_call_id",
        ),
        (
            chat(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"function": {"name": "f", "arguments": SURROGATE}}],
                }
            ),
            InvalidMessageError,
            (0, 1, None),
            "tool call arguments",
        ),
        (
            chat(
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "https://x/" + SURROGATE}}
                    ],
                }
            ),
            InvalidMessageError,
            (0, 1, 0),
            "image_url url",
        ),
        (
            chat({"role": "user", "content": [{"type": "file", "file": {"filename": SURROGATE}}]}),
            InvalidMessageError,
            (0, 1, 0),
            "file filename",
        ),
        (
            [[{"role": "user", "content": "x"}], "text " + SURROGATE],
            InvalidSceneError,
            (1, None, None),
            "scene text",
        ),
    ],
)
def test_lone_surrogates_are_typed_errors_naming_where(
    scenes: list[Any], error: type[InputError], where: tuple[Any, ...], what: str, length: int
) -> None:
    # Long text used to raise UnicodeEncodeError in the splitter; short text gave items that
    # cannot be written as UTF-8.
    scenes = json.loads(json.dumps(scenes).replace("\\ud800", "\\ud800" + " words" * length))
    with pytest.raises(error) as caught:
        READERS["recursive"].get_memory(scenes, type="chat", info=INFO)
    assert type(caught.value) is error
    assert (caught.value.scene_index, caught.value.message_index, caught.value.part_index) == where
    assert f"{what} holds a lone surrogate '\\ud800'" in str(caught.value)
    location = ", ".join(
        f"{name} {index}"
        for name, index in zip(("scene", "message", "part"), where, strict=True)
        if index is not None
    )
    assert str(caught.value).startswith(location + ": ")


@pytest.mark.parametrize("length", [1, LONG])
def test_lone_surrogates_in_documents_are_document_errors(length: int) -> None:
    text = "Chapter one. " * length + SURROGATE
    for doc in (text, {"type": "text", "text": text}):
        with pytest.raises(DocumentError, match=r"^scene 1, message 0: document text holds a lone"):
            READERS["recursive"].get_memory(["fine", doc], type="doc", info=INFO)


def test_lone_surrogates_in_info_are_info_errors() -> None:
    info = {**INFO, "project": {"tags": ["ok", "bad" + SURROGATE]}}
    with pytest.raises(InvalidInfoError, match=r"info\['project'\]\['tags'\]\[1\] holds a lone"):
        READERS["recursive"].get_memory("hello", type="chat", info=info)
    with pytest.raises(InvalidInfoError, match=r"a key of info holds a lone"):
        READERS["recursive"].get_memory("hello", type="chat", info={**INFO, SURROGATE: 1})


def test_paired_surrogates_and_astral_characters_are_fine() -> None:
    emoji = json.loads('"\\ud83c\\udf89"')  # a proper pair: one character
    assert emoji == "🎉"
    scenes = [[{"role": "user", "content": emoji * 200, "chat_time": emoji}]]
    result = READERS["recursive"].get_memory(scenes, type="chat", info={**INFO, "x": emoji})
    assert_exact(scenes, result)
    for item in result[0]:
        json.dumps(item.to_dict(), ensure_ascii=False).encode("utf-8")


def test_check_text_helpers() -> None:
    assert check_text("plain", "tag") == "plain"
    with pytest.raises(InputError, match=r"^scene 2, message 1: tag holds a lone"):
        check_text("x" + SURROGATE, "tag", error=InputError, scene_index=2, message_index=1)
    cyclic: dict[str, Any] = {"a": ["b"]}
    cyclic["self"] = cyclic
    check_nested_text(cyclic, "info")  # a cycle is walked once, not forever
    deep: Any = SURROGATE
    for _ in range(10_000):  # deeper than the recursion limit
        deep = [deep]
    with pytest.raises(InvalidInfoError):
        check_nested_text(deep, "info")


def test_windower_with_a_lone_surrogate_cuts_by_tokens() -> None:
    # Normalisation refuses such text; used directly, the windower must still not crash.
    from memreader.windowing.chunking import RecursiveSplitter

    text = ("abc " + SURROGATE) * 200
    windows = Windower(64, 8, splitter=RecursiveSplitter()).windows([Unit(text)])
    assert len(windows) > 1


# -- messages without text ----------------------------------------------------------------------


@pytest.mark.parametrize("content", [None, []])
def test_message_without_content_has_a_source_without_span(content: Any) -> None:
    scenes = [
        [{"role": "user", "content": "I like tea"}, {"role": "assistant", "content": content}]
    ]
    [[item]] = READERS["recursive"].get_memory(scenes, type="chat", info=INFO)
    first, second = item.metadata.sources
    assert first.span == (0, 10)
    assert second.message_index == 1 and second.role == "assistant"
    assert (second.type, second.span, second.content) == ("empty", None, "")
    assert item.memory == "user: I like tea\nassistant: "
    assert_exact(scenes, [[item]])


def test_empty_text_keeps_its_honest_empty_span() -> None:
    scenes = [
        [
            {"role": "user", "content": ""},
            {"role": "user", "content": [{"type": "text", "text": ""}]},
        ]
    ]
    [[item]] = READERS["recursive"].get_memory(scenes, type="chat", info=INFO)
    assert [(s.type, s.span, s.part_index) for s in item.metadata.sources] == [
        ("chat", (0, 0), None),
        ("chat", (0, 0), 0),
    ]
    assert_exact(scenes, [[item]])


part = st.one_of(
    st.text(max_size=30),
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=30)),
    st.just({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
    st.just({"type": "input_audio"}),
)
content = st.one_of(st.none(), st.just([]), st.text(max_size=200), st.lists(part, max_size=4))
message = st.builds(
    lambda role, content: {"role": role, "content": content},
    st.sampled_from(["user", "assistant", "system", "tool"]),
    content,
)
text_alphabet = st.characters(codec="utf-8")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes=st.lists(st.lists(message, min_size=1, max_size=6), min_size=1, max_size=3))
def test_every_span_slices_its_text_back(scenes: list[list[dict[str, Any]]]) -> None:
    result = READERS["tokens"].get_memory(scenes, type="chat", info=INFO)
    assert_exact(scenes, result)
    for scene, items in zip(scenes, result, strict=True):
        seen = {s.message_index for item in items for s in item.metadata.sources}
        assert seen == set(range(len(scene))), "every message is in some item's sources"
