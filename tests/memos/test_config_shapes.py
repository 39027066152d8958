"""MemOS reader configs, from dicts and YAML: translated with a report of what each setting
became, MemOS's defaults, the unknown settings reported once, and exact typed errors."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader import MemReaderConfigFactory as CoreFactory
from memreader.errors import ConfigError, MemOSConfigError
from memreader.memos import MemReaderConfigFactory, looks_like_memos_config, translate_reader_config
from tests.common import ROOT
from tests.memos.shapes import memos_llm, memos_reader_config

URL = "http://127.0.0.1:9/v1"


def test_a_memos_config_is_translated_with_a_note_of_each_setting() -> None:
    cfg = MemReaderConfigFactory.model_validate(memos_reader_config(URL))
    llm = cfg.config.llm
    assert llm is not None
    assert (llm.backend, llm.model, llm.base_url, llm.max_tokens) == (
        "openai",
        "test-model",
        URL,
        1024,
    )
    assert llm.api_key_value() == "sk-test-secret"
    assert (cfg.config.window.max_tokens, cfg.config.window.overlap_tokens) == (256, 32)
    assert cfg.config.fine.enabled_passes() == (
        "extract",
        "tool_schema",
    )  # MemOS: no filter, no rewrite
    notes = {n.setting: n for n in cfg.translation.notes}
    assert notes["llm.config.model_name_or_path"].became == "llm.model"
    assert notes["chunker.config.chunk_size"].became == "window.max_tokens"
    assert notes["llm.config.top_k"].kind == "unused"
    assert notes["remove_prompt_example"].kind == "unused"
    assert notes["(defaults)"].kind == "default"
    report = str(cfg.translation)
    assert "llm.config.api_base -> llm.base_url" in report
    assert "sk-test-secret" not in report


def test_a_memos_yaml_file_works_through_both_factories(tmp_path: Path) -> None:
    path = tmp_path / "memos.yaml"
    path.write_text(yaml.safe_dump(memos_reader_config(URL)), encoding="utf-8")
    ours = MemReaderConfigFactory.from_yaml_file(path)
    core = CoreFactory.from_yaml(path)
    assert ours.config == core.config
    assert ours.cache_key() == core.cache_key()
    json_path = tmp_path / "memos.json"
    json_path.write_text(yaml.safe_dump(memos_reader_config(URL), default_flow_style=True))
    assert MemReaderConfigFactory.from_json_file(json_path).config == core.config


def test_every_slot_and_the_multimodal_settings_are_read() -> None:
    raw = memos_reader_config(
        URL,
        general_llm=memos_llm(URL, "general"),
        image_parser_llm=memos_llm(URL, "vision"),
        document_parser_llm=memos_llm(URL, "docs"),
        preference_extractor_llm=memos_llm(URL, "prefs"),
        chat_window_max_tokens=512,
        direct_markdown_hostnames=["docs.example.com"],
        oss_config={"bucket": "b"},
        skills_dir_config={"skills_local_dir": "/tmp/skills", "skills_oss_dir": "skills/"},
        memory_version_switch="off",
    )
    raw["backend"] = "multimodal_struct"
    cfg = MemReaderConfigFactory(**raw)
    models = [
        getattr(cfg.config, slot).model
        for slot in (
            "general_llm",
            "image_parser_llm",
            "document_parser_llm",
            "preference_extractor_llm",
        )
    ]
    assert models == ["general", "vision", "docs", "prefs"]
    assert cfg.config.window.max_tokens == 512  # the chat window; chunk_size is noted unused
    assert cfg.config.fetch.direct_markdown_hostnames == ["docs.example.com"]
    assert cfg.config.fine.skills.output == "/tmp/skills"
    unused = {n.setting for n in cfg.translation.of_kind("unused")}
    assert {"oss_config", "skills_dir_config.skills_oss_dir", "chunker.config.chunk_size"} <= unused
    assert not {"direct_markdown_hostnames", "skills_dir_config"} & unused


def test_unknown_settings_are_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    raw = memos_reader_config(URL, some_future_setting=1)
    with caplog.at_level(logging.INFO, logger="memreader.memos"):
        cfg = MemReaderConfigFactory(**raw)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].getMessage().count("some_future_setting") == 1
    assert "remove_prompt_example" in warnings[0].getMessage()
    assert [n.detail for n in cfg.translation.notes if n.setting == "some_future_setting"] == [
        "not a setting memreader knows"
    ]


def test_memreaders_own_settings_beside_memos_ones_are_taken_as_they_are() -> None:
    raw = memos_reader_config(URL, fine={"rewrite": "user_only"}, embed_prefixes=True)
    cfg = MemReaderConfigFactory(**raw)
    assert cfg.config.fine.enabled_passes() == ("extract", "filter", "rewrite", "tool_schema")
    assert cfg.config.embed_prefixes is True
    plain = translate_reader_config(raw["config"], memos_defaults=False)
    assert "fine" in plain.config and "(defaults)" not in {n.setting for n in plain.notes}
    assert (
        "fine"
        not in translate_reader_config(
            memos_reader_config(URL)["config"], memos_defaults=False
        ).config
    )


def test_memory_version_switch_on_runs_reconcile_against_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'm.db'}"
    cfg = MemReaderConfigFactory(
        **memos_reader_config(URL, memory_version_switch="on", store=store)
    )
    assert cfg.config.fine.enabled_passes() == ("extract", "tool_schema", "reconcile")


def test_memreader_configs_are_not_taken_for_memos_ones() -> None:
    ours = {"llm": {"model": "m"}, "embedder": {"backend": "hash", "config": {}}}
    assert not looks_like_memos_config(ours)
    cfg = MemReaderConfigFactory(backend="simple_struct", config=ours)
    assert cfg.translation.notes == []
    assert cfg.config.fine.enabled_passes() == ("extract", "filter", "rewrite", "tool_schema")


@pytest.mark.parametrize(
    ("embedder", "backend", "config"),
    [
        (
            {
                "backend": "universal_api",
                "config": {
                    "provider": "openai",
                    "api_key": "k",
                    "model_name_or_path": "text-embedding-3-small",
                    "base_url": URL,
                    "embedding_dims": 256,
                },
            },
            "openai",
            {"model": "text-embedding-3-small", "api_key": "k", "base_url": URL, "dimensions": 256},
        ),
        (
            {
                "backend": "ollama",
                "config": {
                    "model_name_or_path": "nomic-embed-text",
                    "api_base": "http://127.0.0.1:11434",
                },
            },
            "ollama",
            {"model": "nomic-embed-text", "host": "http://127.0.0.1:11434"},
        ),
        (
            {
                "backend": "sentence_transformer",
                "config": {"model_name_or_path": "all-MiniLM-L6-v2"},
            },
            "local",
            {},
        ),
    ],
)
def test_memos_embedders_are_translated(
    embedder: dict[str, Any], backend: str, config: dict[str, Any]
) -> None:
    raw = memos_reader_config(URL, embedder=embedder)
    translated = translate_reader_config(raw["config"]).config["embedder"]
    assert translated == {"backend": backend, "config": config}


def test_memos_llm_backends_take_their_memos_defaults() -> None:
    qwen = {"backend": "qwen", "config": {"model_name_or_path": "qwen-plus", "api_key": "k"}}
    ollama = {
        "backend": "ollama",
        "config": {"model_name_or_path": "qwen3", "top_k": 20, "enable_thinking": False},
    }
    out = translate_reader_config({"llm": qwen, "general_llm": ollama}).config
    assert out["llm"]["base_url"] == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert out["general_llm"] == {
        "backend": "ollama",
        "model": "qwen3",
        "extra_body": {"top_k": 20, "think": False},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"llm": {"backend": "azure", "config": {"model_name_or_path": "m", "api_key": "k"}}},
            "llm.backend 'azure': memreader has no Azure OpenAI backend",
        ),
        (
            {"general_llm": {"backend": "huggingface", "config": {"model_name_or_path": "m"}}},
            "general_llm.backend 'huggingface': memreader runs no in-process Hugging Face model",
        ),
        (
            {"llm": {"backend": "gpt", "config": {"model_name_or_path": "m"}}},
            "llm.backend 'gpt' is not a MemOS LLM backend",
        ),
        (
            {"llm": {"backend": "openai", "config": {"api_key": "k"}}},
            "llm.config.model_name_or_path is required",
        ),
        (
            {
                "llm": {
                    "backend": "openai",
                    "config": {"model_name_or_path": "m", "temprature": 0.1},
                }
            },
            "llm.config.temprature is not a setting of MemOS's openai LLM backend",
        ),
        ({"llm": {"backend": "openai"}}, "llm must have a backend name and a config mapping"),
        (
            {"embedder": {"backend": "ark", "config": {"model_name_or_path": "m", "api_key": "k"}}},
            "embedder.backend 'ark': memreader has no Ark embedder",
        ),
        (
            {"chunker": {"backend": "semantic", "config": {}}},
            "chunker.backend 'semantic' is not a MemOS chunker",
        ),
        (
            {"chunker": {"backend": "sentence", "config": {"chunk_sise": 1}}},
            "chunker.config.chunk_sise is not a setting of MemOS's sentence chunker",
        ),
        ({"memory_version_switch": "on"}, "memory_version_switch: on merges new memories"),
        (
            {"memory_version_switch": "yes"},
            "memory_version_switch must be 'on' or 'off', got 'yes'",
        ),
    ],
)
def test_bad_memos_configs_raise_a_typed_error_naming_the_setting(
    change: dict[str, Any], message: str
) -> None:
    raw = memos_reader_config(URL)
    raw["config"].update(change)
    with pytest.raises(MemOSConfigError) as caught:
        MemReaderConfigFactory(**raw)
    assert str(caught.value).startswith(message)
    with pytest.raises(MemOSConfigError):
        CoreFactory(**raw)


def test_a_translated_value_memreader_refuses_is_a_config_error_naming_it() -> None:
    raw = memos_reader_config(URL)
    raw["config"]["chunker"]["config"]["chunk_overlap"] = 200  # more than half of 256
    with pytest.raises(
        ConfigError, match=r"window: Value error, overlap_tokens \(200\) must be at most half"
    ):
        MemReaderConfigFactory(**raw)


def test_the_command_line_reads_with_a_memos_yaml(tmp_path: Path) -> None:
    raw = memos_reader_config(URL)
    (tmp_path / "memos.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    (tmp_path / "chat.json").write_text('[[{"role": "user", "content": "I love tea."}]]')
    argv = [sys.executable, "-m", "memreader.cli", "read", "chat.json", "--type", "chat"]
    argv += ["--mode", "fast", "--config", "memos.yaml", "-o", "out.jsonl"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "remove_prompt_example" in done.stderr  # the unused MemOS settings, reported
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["memory"] for row in rows] == ["user: I love tea."]
