"""``Memory``: add, search, get, history, forget, categories and the Markdown export through the
one object, and the typed errors of bad arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memreader import InputError, Memory, StoreError, UnsupportedModeError
from memreader.stores import SourceSelector

CHAT = [
    {"role": "user", "content": "I moved to Lisbon and want piano lessons."},
    {"role": "assistant", "content": "Classical or jazz?"},
]


def test_add_reads_writes_and_reports(memory: Memory) -> None:
    result = memory.add(CHAT, user_id="emily", session_id="s1")
    assert result.type == "chat" and result.session_id == "s1" and not result.session_generated
    assert [e.event for e in result.events] == ["ADD"] * len(result.items)
    assert result.counts == {"ADD": len(result.items)} and result.items
    assert result.report.mode == "fast" and result.report.windows
    stored = memory.get(result.items[0].id, user_id="emily")
    assert stored is not None and stored.item.metadata.session_id == "s1"


def test_the_store_is_opened_with_the_readers_embedder(memory: Memory) -> None:
    memory.add(CHAT, user_id="emily")
    hits = memory.search("piano lessons", user_id="emily", mode="vector")
    assert hits and hits[0].score.similarity is not None


def test_a_hit_shows_the_memory_at_the_top(memory: Memory) -> None:
    result = memory.add("I drink oolong tea.", user_id="emily", session_id="s2")
    (hit,) = memory.search("oolong", user_id="emily")
    assert (hit.id, hit.text, hit.session_id) == (
        result.items[0].id,
        "user: I drink oolong tea.",
        "s2",
    )
    assert hit.memory_type == result.items[0].metadata.memory_type.value


def test_a_missing_session_is_a_digest_of_the_input_so_adding_again_changes_nothing(
    memory: Memory,
) -> None:
    first = memory.add(CHAT, user_id="emily")
    assert first.session_generated and first.session_id.startswith("auto-")
    assert len(first.session_id) == len("auto-") + 16
    again = memory.add(CHAT, user_id="emily")
    assert again.session_id == first.session_id
    assert again.counts == {"NONE": len(first.items)}
    other = memory.add(CHAT[:1], user_id="emily")
    assert other.session_id != first.session_id
    events = memory.forget(f"session:{first.session_id}", user_id="emily")
    assert {e.event for e in events} == {"EXPIRE"}
    gone = memory.get(first.items[0].id, user_id="emily")
    assert gone is not None and gone.status == "expired"


@pytest.mark.parametrize(
    ("data", "kind", "scenes"),
    [
        ("I live in Porto.", "chat", 1),
        (CHAT, "chat", 1),
        ([CHAT, CHAT[:1]], "chat", 2),
        (["# Notes\n\nAna lives in Porto.", "Ana teaches piano."], "doc", 2),
        ([{"type": "text", "text": "Ana lives in Porto."}], "doc", 1),
    ],
)
def test_type_none_guesses_chat_or_doc(memory: Memory, data: Any, kind: str, scenes: int) -> None:
    result = memory.add(data, user_id="ana")
    assert result.type == kind
    assert len({s.scene_index for i in result.items for s in i.metadata.sources}) == scenes


def test_a_string_is_one_user_message_or_with_type_doc_one_document(memory: Memory) -> None:
    chat = memory.add("I live in Porto.", user_id="ana")
    assert chat.items[0].metadata.sources[0].role == "user"
    doc = memory.add("Ana lives in Porto.", user_id="ana", type="doc")
    assert doc.type == "doc" and doc.items[0].metadata.sources[0].role is None


def test_metadata_reaches_each_item(memory: Memory) -> None:
    result = memory.add(CHAT, user_id="emily", metadata={"app": "tutor"})
    assert all(item.metadata.info.get("app") == "tutor" for item in result.items)


def test_search_filters_and_history(memory: Memory) -> None:
    memory.add(CHAT, user_id="emily", session_id="s1")
    memory.add("I drink oolong tea.", user_id="emily", session_id="s2")
    hits = memory.search("tea", user_id="emily", k=5, session_id="s2")
    assert hits and {h.memory.item.metadata.session_id for h in hits} == {"s2"}
    assert memory.search("tea", user_id="someone-else") == []
    history = memory.history(hits[0].memory.id, user_id="emily")
    assert [entry.event for entry in history] == ["ADD"]
    # min_score passes through: a cut no hit reaches leaves none.
    assert memory.search("tea", user_id="emily", min_score=0.0)
    assert memory.search("tea", user_id="emily", min_score=1.0) == [] or all(
        h.score.relevance >= 1.0 for h in memory.search("tea", user_id="emily", min_score=1.0)
    )


def test_forget_takes_a_source_selector(memory: Memory) -> None:
    memory.add(CHAT, user_id="emily", session_id="s1")
    events = memory.forget(SourceSelector(session_id="s1"), user_id="emily")
    assert events and {e.event for e in events} == {"EXPIRE"}


def test_categories_are_kept_and_exported(memory: Memory, tmp_path: Path) -> None:
    memory.add(CHAT, user_id="emily")
    categories = memory.categories("emily")
    assert categories and any(c.item_ids and c.summary for c in categories)
    written = memory.export_markdown(tmp_path / "md", user_id="emily")
    assert any(path.endswith("index.md") for path in written)
    assert all(Path(path).is_file() for path in written)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.add(CHAT), "add() needs user_id= (every memory has an owner)"),
        (lambda m: m.search("x"), "search() needs user_id= (every memory has an owner)"),
        (lambda m: m.get("id"), "get() needs user_id= (every memory has an owner)"),
        (lambda m: m.history("id"), "history() needs user_id= (every memory has an owner)"),
        (lambda m: m.forget("session:s1"), "forget() needs user_id= (every memory has an owner)"),
        (lambda m: m.categories(), "categories() needs user_id= (every memory has an owner)"),
        (
            lambda m: m.export_markdown("out"),
            "export_markdown() needs user_id= (every memory has an owner)",
        ),
        (lambda m: m.add(CHAT, user_id=""), "add(): user_id must be a non-empty string, got ''"),
        (lambda m: m.add(CHAT, user_id=7), "add(): user_id must be a non-empty string, got 7"),
        (
            lambda m: m.add(CHAT, user_id="u", session_id=5),
            "add(): session_id must be a non-empty string or None, got 5",
        ),
        (
            lambda m: m.add(CHAT, user_id="u", session_id=" "),
            "add(): session_id must be a non-empty string or None, got ' '",
        ),
        (
            lambda m: m.search("x", user_id="u", k=0),
            "k must be a positive integer of at most 1000, got 0",
        ),
        (lambda m: m.search(3, user_id="u"), "query must be a string, got int"),
        (lambda m: m.get("", user_id="u"), "memory_id must be a non-empty string, got ''"),
        (
            lambda m: m.add(42, user_id="u"),
            "add() takes a string, a chat (a list of message dicts), a list of scenes or a list "
            "of documents; got int",
        ),
        (
            lambda m: m.add([], user_id="u"),
            "add() takes a string, a chat (a list of message dicts), a list of scenes or a list "
            "of documents; got an empty list",
        ),
        (
            lambda m: m.add([CHAT, "text"], user_id="u"),
            "add() cannot tell what this list is (mixed messages, scenes and documents): "
            "pass type='chat' or type='doc'",
        ),
        (
            lambda m: m.add(CHAT, user_id="u", type="image"),
            "add(type=...) must be None, 'chat' or 'doc', got 'image'",
        ),
        (
            lambda m: m.add(CHAT, user_id="u", metadata=["x"]),
            "add(metadata=...) must be a dict, got list",
        ),
        (
            lambda m: m.add(CHAT, user_id="u", metadata={"user_id": "v"}),
            "add(metadata=...) may not hold 'user_id': pass it as an argument",
        ),
        (
            lambda m: m.search("x", user_id="u", sesion_id="s1"),
            "search() has no filter 'sesion_id'; known: agent_id, category, heat_weight, "
            "include_inactive, min_score, mode, session_id, since, task_id, types, until",
        ),
        (
            lambda m: m.forget("chat:s1", user_id="u"),
            "forget() takes a SourceSelector or doc:PATH, session:ID, message:ID or input:KEY; "
            "got 'chat:s1'",
        ),
    ],
)
def test_bad_arguments_are_typed_errors(memory: Memory, call: Any, message: str) -> None:
    with pytest.raises(InputError) as caught:
        call(memory)
    assert str(caught.value) == message


def test_an_unknown_mode_is_a_typed_error(memory: Memory) -> None:
    with pytest.raises(UnsupportedModeError, match=r"^unknown mode 'slow'; expected one of"):
        memory.add(CHAT, user_id="u", mode="slow")  # type: ignore[arg-type]


def test_a_closed_memory_says_so(fast_config: dict[str, Any], tmp_path: Path) -> None:
    m = Memory(fast_config, store=f"sqlite:///{tmp_path / 'm.db'}")
    m.close()
    m.close()  # a second close does nothing
    with pytest.raises(StoreError, match="this Memory is closed"):
        m.search("x", user_id="u")
    with pytest.raises(StoreError, match="this Memory is closed"):
        m.add("x", user_id="u")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"config": 3},
            "Memory(config) takes a YAML path, a dict or a MemReaderConfigFactory, got int",
        ),
        ({"store": 3}, "Memory(store=...) must be a URL string, got int"),
        (
            {"store_options": {"text_only": True}},
            "Memory(store_options=...) cannot set text_only: the reader's config does (its "
            "embedder, or `embedder: null` for text-only search; its categories; its lifecycle)",
        ),
        (
            {"store_options": {"lifecycle": {"max_active": 5}}},
            "Memory(store_options=...) cannot set lifecycle: the reader's config does (its "
            "embedder, or `embedder: null` for text-only search; its categories; its lifecycle)",
        ),
    ],
)
def test_bad_construction_is_a_typed_error(
    home: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        Memory(**kwargs)
    assert str(caught.value) == message
