"""MemOS settings that change results are translated or refused, never reported as "results
unchanged": ``chat_chunker`` (the strategy reader's session groups), ``direct_markdown_hostnames``,
``skills_dir_config``; a misspelt embedder setting is an error as a misspelt LLM setting is; and
hostile MemOS calls are typed errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memreader.errors import ConfigError, InputError, MemOSConfigError
from memreader.memos import MEMREADER_CALL_DEFAULTS, MemReaderConfigFactory, MemReaderFactory
from memreader.steps.report import ReadReport
from tests.memos.shapes import INFO, memos_reader_config

URL = "http://127.0.0.1:9/v1"
SESSIONS = {"backend": "strategy_struct", "config": {"chunk_type": "default", "chunk_length": 1600}}


def strategy_config(**extra: Any) -> dict[str, Any]:
    raw = memos_reader_config(URL, **extra)
    raw["backend"] = "strategy_struct"
    return raw


def chunker(**settings: Any) -> dict[str, Any]:
    return {**SESSIONS, "config": {**SESSIONS["config"], **settings}}


def test_a_strategy_chat_chunker_reads_session_windows_as_memos_does() -> None:
    raw = strategy_config(chat_chunker=chunker(chunk_session=5, chunk_overlap=1))
    reader = MemReaderFactory.from_config(raw, defaults=MEMREADER_CALL_DEFAULTS)
    strategy = reader.reader.config.strategy
    assert (strategy.chunk_by, strategy.chunk_session, strategy.chunk_overlap) == ("session", 5, 1)
    chat = [[{"role": "user", "content": f"Message number {n}."} for n in range(12)]]
    items = reader.get_memory(chat, "chat", dict(INFO), mode="fast")[0]
    groups = [[s.message_index for s in item.metadata.sources] for item in items]
    # MemOS: range(0, 12 - 1, 5 - 1) -> messages 0-4, 4-8, 8-11.
    assert groups == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9, 10, 11]]
    notes = {n.setting: n for n in MemReaderConfigFactory(**raw).translation.notes}
    assert notes["chat_chunker.config.chunk_session"].became == "strategy.chunk_session"
    assert notes["chat_chunker.config.chunk_length"].kind == "unused"  # session grouping


def test_a_content_length_chat_chunker_groups_by_characters() -> None:
    by_length = {"chunk_type": "content_length", "chunk_length": 900}
    raw = strategy_config(chat_chunker={"backend": "x", "config": by_length})
    strategy = MemReaderConfigFactory(**raw).config.strategy
    assert (strategy.chunk_by, strategy.content_length, strategy.chunk_overlap) == (
        "content_length",
        900,
        1,
    )


def test_chat_chunker_is_said_unused_only_where_no_reader_groups_by_it() -> None:
    raw = memos_reader_config(URL, chat_chunker=chunker(chunk_session=5, chunk_overlap=1))
    notes = {n.setting: n for n in MemReaderConfigFactory(**raw).translation.notes}
    assert notes["chat_chunker"].kind == "unused"
    assert "strategy_struct" in notes["chat_chunker"].detail


def test_direct_markdown_hostnames_reach_the_multimodal_readers_fetch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = memos_reader_config(URL, direct_markdown_hostnames=["Docs.Example.com"])
    raw["backend"] = "multimodal_struct"
    raw["config"]["fetch"] = {"direct_markdown_hostnames": ["wiki.example.org"]}
    cfg = MemReaderConfigFactory(**raw)
    assert cfg.config.fetch.direct_markdown_hostnames == ["wiki.example.org", "docs.example.com"]
    # None: MemOS reads its environment variable; so does the translation.
    monkeypatch.setenv("FILE_PARSER_DIRECT_MARKDOWN_HOSTNAMES", "a.example.com, b.example.com")
    raw = memos_reader_config(URL, direct_markdown_hostnames=None)
    raw["backend"] = "multimodal_struct"
    fetch = MemReaderConfigFactory(**raw).config.fetch
    assert fetch.direct_markdown_hostnames == ["a.example.com", "b.example.com"]


def test_skills_dir_config_sets_where_skills_are_written(tmp_path: Path) -> None:
    folder = str(tmp_path / "skills")
    raw = memos_reader_config(
        URL, skills_dir_config={"skills_local_dir": folder, "skills_local_tmp_dir": "/tmp/x"}
    )
    cfg = MemReaderConfigFactory(**raw)
    assert cfg.config.fine.skills.output == folder
    assert cfg.config.fine.enabled_passes() == ("extract", "tool_schema")  # MemOS's defaults kept


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"chat_chunker": chunker(chunk_sesion=5)},
            "chat_chunker.config.chunk_sesion is not a setting of MemOS's chat chunker",
        ),
        ({"chat_chunker": {"backend": "x"}}, "chat_chunker must be a mapping with backend"),
        (
            {"chat_chunker": chunker(chunk_session=4, chunk_overlap=3)},
            "chat_chunker: memreader cannot group chats so: invalid GroupingConfig",
        ),
        (
            {"chat_chunker": chunker(chunk_session=5), "strategy": {"chunk_by": "session"}},
            "chat_chunker and strategy both say how chats are grouped",
        ),
        (
            {"direct_markdown_hostnames": "docs.example.com"},
            "direct_markdown_hostnames must be a list of host names",
        ),
        (
            {"skills_dir_config": {"skills_dir": "/tmp/s"}},
            "skills_dir_config.skills_dir is not a key of MemOS's skills_dir_config",
        ),
        (
            {
                "skills_dir_config": {"skills_local_dir": "/tmp/a"},
                "fine": {"skills": {"output": "/tmp/b"}},
            },
            "skills_dir_config.skills_local_dir ('/tmp/a') and fine.skills.output ('/tmp/b')",
        ),
        (
            {
                "embedder": {
                    "backend": "universal_api",
                    "config": {"provider": "openai", "model_name_or_path": "m", "api_kye": "k"},
                }
            },
            "embedder.config.api_kye is not a setting of MemOS's universal_api embedder backend",
        ),
        (
            {"embedder": {"backend": "ollama", "config": {"model_name_or_path": "m", "host": "h"}}},
            "embedder.config.host is not a setting of MemOS's ollama embedder backend",
        ),
        (
            {
                "embedder": {
                    "backend": "universal_api",
                    "config": {"provider": "azure", "model_name_or_path": "m", "api_key": "k"},
                }
            },
            "embedder.config.provider 'azure': memreader's embedders speak the OpenAI API",
        ),
    ],
)
def test_memos_settings_memreader_cannot_honour_are_refused(
    change: dict[str, Any], message: str
) -> None:
    raw = strategy_config(**change)
    with pytest.raises(MemOSConfigError) as caught:
        MemReaderConfigFactory(**raw)
    assert str(caught.value).startswith(message)


def test_skills_uploaded_to_oss_by_memos_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLS_REPO_BACKEND", "OSS")
    raw = memos_reader_config(URL, skills_dir_config={"skills_local_dir": "/tmp/s"})
    with pytest.raises(MemOSConfigError, match=r"fine\.skills\.output: s3://bucket/prefix"):
        MemReaderConfigFactory(**raw)


@pytest.fixture(scope="module")
def fast_reader() -> Any:
    raw = memos_reader_config(URL)
    return MemReaderFactory.from_config(raw, defaults=MEMREADER_CALL_DEFAULTS)


CHAT = [[{"role": "user", "content": "I love tea."}]]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda r: r.get_memory(CHAT, "chat", {**INFO, "custom_tags": 5}),
            InputError,
            "info['custom_tags'] must be a list of strings, got int",
        ),
        (
            lambda r: r.get_memory(CHAT, "chat", {**INFO, "custom_tags": "tea"}),
            InputError,
            "info['custom_tags'] must be a list of strings, got str",
        ),
        (
            lambda r: r.get_memory(CHAT, "chat", dict(INFO), custom_tags=7),
            InputError,
            "custom_tags must be a list of strings, got int",
        ),
        (
            lambda r: r.get_memory(CHAT, "chat", dict(INFO), user_context=5),
            InputError,
            "user_context must be a MemOS UserContext or a mapping, got int",
        ),
        (
            lambda r: r.get_memory(CHAT, "chat", dict(INFO), user_context={"project_id": 3}),
            InputError,
            "user_context.project_id must be a string, got int",
        ),
        (
            lambda r: r.get_memory(CHAT, "chat", {**INFO, "chunk_size": [512]}),
            ConfigError,
            "the window the call's info asks for (max_tokens=[512])",
        ),
        (
            lambda r: r.fine_transfer_simple_mem([], "chat", custom_tags="tea"),
            InputError,
            "custom_tags must be a list of strings, got str",
        ),
        (
            lambda r: r.set_graph_db("memories.db"),
            MemOSConfigError,
            "graph_db 'memories.db' is not a store URL",
        ),
    ],
)
def test_hostile_memos_calls_are_typed_errors(
    fast_reader: Any, call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        call(fast_reader)
    assert str(caught.value).startswith(message)


def test_a_window_info_asks_for_is_read_as_before(fast_reader: Any) -> None:
    report = ReadReport()
    fast_reader.get_memory(
        CHAT, "chat", {**INFO, "chunk_size": 128, "chunk_overlap": 0}, mode="fast", report=report
    )
    assert len(report.windows) == 1
