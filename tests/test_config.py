"""Config models, YAML with ${ENV}, secrets that never print, and the factory's cache."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memreader import (
    ConfigError,
    MemReaderConfigFactory,
    MemReaderFactory,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
)
from memreader.service.config import load_service_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reader.yaml"
    path.write_text(text, encoding="utf-8")
    return path


YAML = """
backend: simple_struct
config:
  window:
    max_tokens: ${MR_TEST_MAX:-512}
    overlap_tokens: 64
  embedder:
    backend: openai
    config:
      model: text-embedding-3-small
      base_url: http://127.0.0.1:1/v1
      api_key: ${MR_TEST_KEY}
"""


def test_yaml_env_interpolation_and_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_TEST_KEY", "sk-very-secret-123")
    cfg = MemReaderConfigFactory.from_yaml(write(tmp_path, YAML))
    assert isinstance(cfg.config, SimpleStructMemReaderConfig)
    assert cfg.config.window.max_tokens == 512
    assert cfg.config.embedder.config[
        "api_key"
    ] == "sk-very-secret-123" or "sk-very-secret-123" not in repr(cfg)
    for text in (repr(cfg), str(cfg), cfg.model_dump_json()):
        assert "sk-very-secret-123" not in text
    monkeypatch.setenv("MR_TEST_MAX", "300")
    assert MemReaderConfigFactory.from_yaml(write(tmp_path, YAML)).config.window.max_tokens == 300


def test_missing_env_var_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MR_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="MR_TEST_KEY"):
        MemReaderConfigFactory.from_yaml(write(tmp_path, YAML))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"backend": "nope"}, "unknown reader backend"),
        (
            {
                "backend": "simple_struct",
                "config": {"window": {"max_tokens": 100, "overlap_tokens": 80}},
            },
            "overlap_tokens",
        ),
        ({"backend": "simple_struct", "config": {"windw": {}}}, "windw"),
        ({"backend": "simple_struct", "config": {"window": {"max_tokens": "big"}}}, "max_tokens"),
        ({"backend": "simple_struct", "extra": 1}, "extra"),
    ],
)
def test_bad_configs(data: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        MemReaderConfigFactory.from_dict(data)


def test_bad_yaml_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        MemReaderConfigFactory.from_yaml(write(tmp_path, "backend: [unclosed"))
    with pytest.raises(ConfigError, match="cannot read"):
        MemReaderConfigFactory.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        MemReaderConfigFactory.from_yaml(write(tmp_path, "- a list"))


def test_factory_caches_one_reader_per_full_config(monkeypatch: pytest.MonkeyPatch) -> None:
    a = MemReaderConfigFactory.from_dict({"config": {"embedder": {"backend": "hash"}}})
    b = MemReaderConfigFactory.from_dict(
        {"backend": "simple_struct", "config": {"embedder": {"backend": "hash", "config": {}}}}
    )
    c = MemReaderConfigFactory.from_dict(
        {"config": {"embedder": {"backend": "hash"}, "window": {"max_tokens": 512}}}
    )
    reader = MemReaderFactory.from_config(a)
    assert isinstance(reader, SimpleStructMemReader)
    assert MemReaderFactory.from_config(b) is reader
    assert MemReaderFactory.from_config(c) is not reader
    MemReaderFactory.clear_cache()
    assert MemReaderFactory.from_config(a) is not reader
    with pytest.raises(ConfigError):
        MemReaderFactory.from_config({"backend": "simple_struct"})  # type: ignore[arg-type]


def test_factory_secrets_distinguish_configs_without_showing_them() -> None:
    def cfg(key: str) -> MemReaderConfigFactory:
        return MemReaderConfigFactory.from_dict(
            {
                "config": {
                    "embedder": {"backend": "openai", "config": {"model": "m", "api_key": key}}
                }
            }
        )

    one, two = cfg("key-one"), cfg("key-two")
    assert one.cache_key() != two.cache_key()
    assert "key-one" not in one.cache_key()


def test_factory_is_thread_safe() -> None:
    cfg = MemReaderConfigFactory.from_dict({"config": {"embedder": {"backend": "hash"}}})
    readers = []
    barrier = threading.Barrier(8)

    def get() -> None:
        barrier.wait()
        readers.append(MemReaderFactory.from_config(cfg))

    threads = [threading.Thread(target=get) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in readers}) == 1


def test_example_configs_load() -> None:
    root = Path(__file__).resolve().parents[1] / "configs"
    paths = sorted(root.glob("*.yaml"))
    assert paths, "configs/ holds example configurations"
    for path in paths:
        if path.name.startswith("job_"):
            continue  # batch job files: tests/test_batch.py loads them
        if path.name.startswith("service_"):
            # a reader config with a `service:` section: the service's loader splits them
            assert load_service_config(path).reader.backend
            continue
        assert MemReaderConfigFactory.from_yaml(path).backend


def test_config_errors_carry_no_secret_anywhere() -> None:
    with pytest.raises(ConfigError) as info:
        MemReaderConfigFactory.from_dict(
            {"config": {"llm": {"model": "m", "api_key": "sk-leak-me", "temperature": "hot"}}}
        )
    assert "llm.temperature" in str(info.value)
    # The pydantic error echoes inputs: it must be neither the cause nor the context.
    assert info.value.__cause__ is None and info.value.__context__ is None
