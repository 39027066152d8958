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
            continue  # batch job files: test_example_job_files_load loads them
        if path.name.startswith("service_"):
            # a reader config with a `service:` section: the service's loader splits them
            assert load_service_config(path).reader.backend
            continue
        assert MemReaderConfigFactory.from_yaml(path).backend


CONFIGS = Path(__file__).resolve().parents[1] / "configs"
JOB_ENV = (
    "MEMREADER_OUT",
    "MEMREADER_REFINE_OUT",
    "MEMREADER_REFINE_READER",
    "MEMREADER_STORE_FILE",
)


def test_example_job_files_load(monkeypatch: pytest.MonkeyPatch) -> None:
    from memreader.batch.job import load_job

    for name in JOB_ENV:
        monkeypatch.delenv(name, raising=False)
    root = CONFIGS.parent
    paths = sorted(CONFIGS.glob("job_*.yaml"))
    assert {p.name for p in paths} >= {"job_memorybank.yaml", "job_refine.yaml"}
    for path in paths:
        job = load_job(path)
        assert MemReaderConfigFactory.from_dict(job.reader_config()).backend, path.name
        for spec in job.inputs:  # inside the checkout: a plain clone runs them
            assert Path(job.resolve(spec.path)).resolve().is_relative_to(root), path.name
        assert Path(job.output_location()).is_relative_to(root / "out"), path.name
    # The refinement job reads what the MemoryBank job wrote, with a fine-mode reader (an LLM).
    fast, refine = load_job(CONFIGS / "job_memorybank.yaml"), load_job(CONFIGS / "job_refine.yaml")
    assert Path(refine.resolve(refine.inputs[0].path)).resolve() == Path(fast.output_location())
    assert refine.inputs[0].format == "jsonl" and refine.output_location() != fast.output_location()
    assert MemReaderConfigFactory.from_dict(refine.reader_config()).config.llm is not None


def test_the_memorybank_job_finds_the_shipped_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from memreader.batch.job import load_job
    from memreader.batch.job_run import dry_run
    from memreader.scenes.memorybank import load_memorybank

    monkeypatch.delenv("MEMREADER_OUT", raising=False)
    rows = dry_run(load_job(CONFIGS / "job_memorybank.yaml"))
    data = CONFIGS.parent / "data" / "memorybank"
    assert [Path(r["input"]) for r in rows] == [
        data / "memory_bank_cn.json",
        data / "memory_bank_en.json",
    ]
    for row in rows:
        days = sum(len(d) for d in load_memorybank(row["input"]).values())
        assert (row["scenes"], row["bad_records"]) == (days, 0)
        assert row["windows"] >= row["scenes"]


def test_config_errors_carry_no_secret_anywhere() -> None:
    with pytest.raises(ConfigError) as info:
        MemReaderConfigFactory.from_dict(
            {"config": {"llm": {"model": "m", "api_key": "sk-leak-me", "temperature": "hot"}}}
        )
    assert "llm.temperature" in str(info.value)
    # The pydantic error echoes inputs: it must be neither the cause nor the context.
    assert info.value.__cause__ is None and info.value.__context__ is None
