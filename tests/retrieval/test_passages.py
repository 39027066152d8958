"""The passages a memory's text is cut into (memreader/retrieval/passages.py): exact spans,
in order, never overlapping, never longer than asked, covering every non-space character, and
a chat message's passage holding that message whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memreader.items import TextualMemoryItem
from memreader.retrieval.passages import (
    embedding_text,
    line_head,
    passages_in,
    passages_of,
    vector_text,
)

_TEXT = st.text(alphabet=st.sampled_from(list("ab c.!?\n。咖啡😀")), max_size=300)


@given(
    text=_TEXT,
    cuts=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40))),
    limit=st.integers(1, 120),
)
def test_passages_are_ordered_exact_spans_that_cover_the_text(
    text: str, cuts: list[tuple[int, int]], limit: int
) -> None:
    contents = [text[start : start + size] for start, size in cuts]
    passages = passages_in(text, contents, max_chars=limit)
    end = 0
    covered: set[int] = set()
    for passage in passages:
        assert end <= passage.start < passage.end <= len(text)
        assert passage.end - passage.start <= limit
        assert not text[passage.start].isspace() and not text[passage.end - 1].isspace()
        covered.update(range(passage.start, passage.end))
        end = passage.end
    assert {i for i, char in enumerate(text) if not char.isspace()} <= covered


def _chat(lines: list[tuple[str, str]]) -> TextualMemoryItem:
    text = "\n".join(f"user (Ana): [9:{i:02d}]: {content}" for i, (_, content) in enumerate(lines))
    sources = [
        {"scene_index": 0, "message_index": i, "content": content, "span": [0, len(content)]}
        for i, (_, content) in enumerate(lines)
    ]
    return TextualMemoryItem.model_validate(
        {
            "id": "m",
            "memory": text,
            "metadata": {"user_id": "u", "session_id": "s", "sources": sources},
        }
    )


@given(
    st.lists(
        st.text(alphabet="abc .咖啡", min_size=1, max_size=60).map(str.strip).filter(bool),
        min_size=1,
        max_size=8,
    )
)
def test_each_message_is_one_passage_that_holds_it_whole(contents: list[str]) -> None:
    item = _chat([("user", content) for content in contents])
    passages = passages_of(item)
    assert [p.source_index for p in passages] == list(range(len(contents)))
    for passage, content in zip(passages, contents, strict=True):
        shown = item.memory[passage.start : passage.end]
        assert shown.startswith("user (Ana): [9:") and shown.endswith(content)
        assert embedding_text(item, passage) == f"Ana: {content}"


def test_a_long_message_is_cut_at_sentence_ends() -> None:
    content = "Ana moved to Porto. " * 60
    item = _chat([("user", content.strip())])
    passages = passages_of(item, max_chars=200)
    assert len(passages) > 1 and all(p.end - p.start <= 200 for p in passages)
    assert all(item.memory[p.start : p.end].endswith(".") for p in passages)


@given(
    st.lists(
        st.text(alphabet="abc ", min_size=1, max_size=12).map(str.strip).filter(bool),
        min_size=1,
        max_size=6,
        unique=True,
    )
)
def test_a_message_is_read_with_its_neighbours(contents: list[str]) -> None:
    item = _chat([("user", content) for content in contents])
    passages = passages_of(item)
    for i in range(len(passages)):
        around = range(max(0, i - 1), min(len(passages), i + 2))
        assert vector_text(item, passages, i) == "\n".join(f"Ana: {contents[j]}" for j in around)
        assert all(
            (f"Ana: {contents[i]}" in vector_text(item, passages, j).split("\n")) == (j in around)
            for j in range(len(passages))
        )


def test_a_document_passage_is_read_alone() -> None:
    text = "Ana moved to Porto. She likes tea. " * 40
    item = TextualMemoryItem.model_validate(
        {"id": "d", "memory": text.strip(), "metadata": {"user_id": "u", "session_id": "s"}}
    )
    passages = passages_of(item, max_chars=200)
    assert len(passages) > 1
    for i, passage in enumerate(passages):
        assert vector_text(item, passages, i) == item.memory[passage.start : passage.end]


@given(
    role=st.sampled_from(["user", "assistant", "tool"]),
    name=st.one_of(st.none(), st.text(alphabet="Anaé B", min_size=1, max_size=10).map(str.strip)),
    time=st.one_of(st.none(), st.sampled_from(["9:12 am on 8 May, 2023", "2023-05-08 09:12"])),
    # (content starting "[x]: " after a head without a time would read as the time: the
    # format's own ambiguity, which a window never writes: its messages all carry times or none)
    content=st.text(alphabet="ab: [](c)\n", min_size=1, max_size=30).filter(
        lambda c: not c.startswith("[")
    ),
)
def test_a_chat_lines_head_names_its_speaker_and_time_and_where_its_content_starts(
    role: str, name: str | None, time: str | None, content: str
) -> None:
    from memreader.windowing.parsers import line_prefix

    line = line_prefix(role, time, name) + content
    head = line_head(line)
    assert head is not None
    shown = " ".join((name or "").split()) or None  # a name is shown on one line
    assert (head.role, head.name, head.chat_time) == (role, shown, time)
    assert line[head.content :] == content
    assert head.speaker == (shown or role)


def test_text_that_is_not_a_chat_line_has_no_head() -> None:
    assert line_head("Introduction: what this document covers") is None
    assert line_head("users: [x]: y") is None
