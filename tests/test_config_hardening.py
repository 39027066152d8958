"""Configs from files nobody checked: bounded YAML, finite numbers, no secret in any dump or
repr, and a cache key that sees every field of a reader's own config class."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memreader import (
    ConfigError,
    MemReaderConfigFactory,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
)
from memreader import config_files as config_module
from memreader.config_files import MAX_CONFIG_BYTES, interpolate_env
from memreader.embedders.config import (
    EmbedderConfig,
    OllamaEmbedderConfig,
    OpenAIEmbedderConfig,
    validate_backend_config,
)
from memreader.llms.config import LLMConfig
from memreader.readers import READERS, register_reader
from tests.llm_server import finishes_within

KEY = "sk-live-KEY-123"
PASSWORD = "pw-SECRET-456"
HEADER = "hdr-SECRET-789"
SECRETS = (KEY, PASSWORD, HEADER)


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "reader.yaml"
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def run_with_deadline(call: Callable[[], Any], seconds: float = 60.0) -> Any:
    """``call()``, or a test failure instead of a hang if it does not return in time."""
    return finishes_within(seconds, call)


# -- YAML ------------------------------------------------------------------------------------

LAUGHS = "\n".join(
    ["backend: simple_struct", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 8) + "]" for i in range(1, 10)]
)


def test_billion_laughs_is_refused_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, LAUGHS)  # 8**10 strings once expanded
    # Work counted, not timed: the walk visits at most MAX_CONFIG_NODES values of 8**10.
    visits = [0]
    walk = config_module._interpolate

    def counted(*args: Any) -> Any:
        visits[0] += 1
        return walk(*args)

    monkeypatch.setattr(config_module, "_interpolate", counted)
    with pytest.raises(ConfigError, match="expands to more than 100000 values") as info:
        run_with_deadline(lambda: MemReaderConfigFactory.from_yaml(path))
    assert "aliases" in str(info.value)
    assert visits[0] == config_module.MAX_CONFIG_NODES + 1
    # Aliases within the budget are fine (a shared LLM config is a real use).
    shared = (
        "llm_defaults: &llm {model: m, base_url: 'http://127.0.0.1:1/v1'}\n"
        "config:\n  embedder: null\n  llm: *llm\n  general_llm: *llm\n"
    )
    with pytest.raises(ConfigError, match="llm_defaults"):  # unknown top-level key, not a hang
        MemReaderConfigFactory.from_yaml(write(tmp_path, shared))


def test_deep_nesting_is_a_config_error_not_a_recursion_error(tmp_path: Path) -> None:
    flow = "config: " + "[" * 5000 + "]" * 5000
    block = "config:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 800)) + "  x: 1\n"
    for text in (flow, block):
        with pytest.raises(ConfigError, match="nested more than 100 levels deep") as info:
            MemReaderConfigFactory.from_yaml(write(tmp_path, text))
        assert "reader.yaml" in str(info.value)
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"k": deep}
    with pytest.raises(ConfigError, match="nested more than 100 levels deep"):
        MemReaderConfigFactory.from_dict({"config": deep})
    with pytest.raises(ConfigError, match="more than 100000 values"):
        interpolate_env({"a": ["x"] * 200_000})


def test_unreadable_config_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'.*reader.yaml' is not valid UTF-8 \(byte 0xff at"):
        MemReaderConfigFactory.from_yaml(write(tmp_path, b"backend: simple_struct\n# \xff\xfe\n"))
    huge = b"# " + b"x" * MAX_CONFIG_BYTES + b"\nbackend: simple_struct\n"
    with pytest.raises(ConfigError, match="over the 1048576 byte limit"):
        MemReaderConfigFactory.from_yaml(write(tmp_path, huge))
    # A device is never read (it could be endless), nor a FIFO opened (it would block).
    with pytest.raises(ConfigError, match="not a regular file"):
        run_with_deadline(lambda: MemReaderConfigFactory.from_yaml("/dev/zero"))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        run_with_deadline(lambda: MemReaderConfigFactory.from_yaml(fifo))


# -- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
@pytest.mark.parametrize(
    ("yaml_path", "field"),
    [
        ("config:\n  llm: {{model: m, backoff_max: {v}}}", "llm.backoff_max"),
        ("config:\n  llm: {{model: m, backoff_base: {v}}}", "llm.backoff_base"),
        ("config:\n  llm: {{model: m, timeout: {v}}}", "llm.timeout"),
        ("config:\n  general_llm: {{model: m, temperature: {v}}}", "general_llm.temperature"),
        ("config:\n  llm: {{model: m, extra_body: {{top_p: {v}}}}}", "top_p"),
        ("config:\n  max_compression_ratio: {v}", "max_compression_ratio"),
    ],
)
def test_non_finite_numbers_are_refused(
    tmp_path: Path, yaml_path: str, field: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=field) as info:
        MemReaderConfigFactory.from_yaml(write(tmp_path, yaml_path.format(v=value)))
    assert "finite" in str(info.value)


@pytest.mark.parametrize(
    ("config_class", "data"),
    [
        (OpenAIEmbedderConfig, {"model": "m", "timeout": float("inf")}),
        (OpenAIEmbedderConfig, {"model": "m", "timeout": float("nan")}),
        (OllamaEmbedderConfig, {"timeout": float("inf")}),
    ],
)
def test_embedder_configs_refuse_non_finite_numbers(config_class: Any, data: Any) -> None:
    with pytest.raises(ConfigError, match="timeout: Input should be a finite number"):
        validate_backend_config("x", config_class, data)


def test_non_finite_numbers_in_any_embedder_config_are_refused() -> None:
    # Checked before the backend's own model: a plugin's model may not refuse them.
    with pytest.raises(ConfigError, match=r"embedder\.config: .*scale\[1\] must be a finite"):
        MemReaderConfigFactory.from_dict(
            {"config": {"embedder": {"backend": "hash", "config": {"scale": [1.0, float("nan")]}}}}
        )


# -- secrets ---------------------------------------------------------------------------------


def secret_config() -> MemReaderConfigFactory:
    llm = {
        "model": "m",
        "api_key": KEY,
        "base_url": f"http://user:{PASSWORD}@127.0.0.1:9/v1",
        "extra_headers": {"Authorization": f"Bearer {HEADER}", "X-Trace": "visible"},
    }
    embedder = {
        "backend": "openai",
        "config": {
            "model": "e",
            "api_key": KEY,
            "base_url": f"http://user:{PASSWORD}@127.0.0.1:9/v1",
            "extra_headers": {"X-Custom-Auth": HEADER},
        },
    }
    return MemReaderConfigFactory.from_dict({"config": {"llm": llm, "embedder": embedder}})


def shows_no_secret(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


def test_python_and_json_dumps_and_reprs_show_no_secret() -> None:
    cfg = secret_config()
    for text in (
        str(cfg.model_dump()),
        repr(cfg.model_dump()),
        cfg.model_dump_json(),
        str(cfg.model_dump(mode="json")),
        repr(cfg),
        str(cfg),
        str(cfg.config.llm.model_dump()),  # type: ignore[union-attr]
        repr(cfg.config.embedder),
        str(cfg.config.embedder.model_dump()),  # type: ignore[union-attr]
        cfg.cache_key(),
    ):
        assert shows_no_secret(text), text
    dump = cfg.model_dump()
    assert "http://***@127.0.0.1:9/v1" in str(dump["config"]["llm"]["base_url"])
    assert dump["config"]["llm"]["extra_headers"]["X-Trace"] == "visible"


def test_validated_embedder_backend_configs_show_no_secret() -> None:
    openai = OpenAIEmbedderConfig(
        model="e",
        api_key=KEY,
        base_url=f"http://user:{PASSWORD}@127.0.0.1:9/v1",
        extra_headers={"Authorization": HEADER},
    )
    ollama = OllamaEmbedderConfig(host=f"http://user:{PASSWORD}@127.0.0.1:9")
    for model in (openai, ollama):
        for text in (repr(model), str(model), str(model.model_dump()), model.model_dump_json()):
            assert shows_no_secret(text), text
        # The dump validates back into the same config, secrets included.
        assert type(model).model_validate(model.model_dump()) == model
    assert "127.0.0.1:9" in repr(ollama) and "127.0.0.1:9" in repr(openai)


def test_dump_modify_validate_keeps_the_real_secrets() -> None:
    cfg = secret_config()
    # What the CLI does: python dump, change a setting, validate again.
    data = cfg.model_dump()
    data["config"]["window"]["max_tokens"] = 512
    data["config"]["llm"]["max_retries"] = 1
    again = MemReaderConfigFactory(**data)
    llm = again.config.llm
    assert llm is not None
    assert llm.api_key_value() == KEY
    assert llm.base_url == f"http://user:{PASSWORD}@127.0.0.1:9/v1"
    assert llm.extra_headers == {"Authorization": f"Bearer {HEADER}", "X-Trace": "visible"}
    assert again.config.window.max_tokens == 512 and llm.max_retries == 1
    embedder = again.config.embedder
    assert embedder is not None
    built = validate_backend_config("openai", OpenAIEmbedderConfig, embedder.config)
    assert built.api_key is not None and built.api_key.get_secret_value() == KEY
    assert built.base_url == f"http://user:{PASSWORD}@127.0.0.1:9/v1"
    assert built.extra_headers == {"X-Custom-Auth": HEADER}
    # An unchanged round trip is the same config, down to the cache key.
    same = MemReaderConfigFactory(**cfg.model_dump())
    assert same == cfg and same.cache_key() == cfg.cache_key()


@pytest.mark.parametrize(
    "change",
    [
        lambda llm: llm.update(base_url="http://user:other@127.0.0.1:9/v1"),
        lambda llm: llm.update(
            extra_headers={"Authorization": "Bearer other", "X-Trace": "visible"}
        ),
        lambda llm: llm.update(api_key="other"),
    ],
)
def test_cache_key_tells_secrets_apart(change: Callable[[dict[str, Any]], None]) -> None:
    cfg = secret_config()
    data = cfg.model_dump()
    change(data["config"]["llm"])
    other = MemReaderConfigFactory(**data)
    assert other.cache_key() != cfg.cache_key()
    assert shows_no_secret(other.cache_key()) and "other" not in other.cache_key()


def test_llm_config_dump_masks_consistently() -> None:
    cfg = LLMConfig(model="m", base_url=f"https://u:{PASSWORD}@example.com/v1", api_key=KEY)
    assert cfg.model_dump(mode="json")["base_url"] == "https://***@example.com/v1"
    assert LLMConfig.model_validate(cfg.model_dump()).base_url == cfg.base_url
    embedder = EmbedderConfig(backend="ollama", config={"host": f"http://u:{PASSWORD}@h:1"})
    assert shows_no_secret(repr(embedder)) and shows_no_secret(embedder.model_dump_json())


# -- cache key and reader config subclasses --------------------------------------------------


class FlavouredConfig(SimpleStructMemReaderConfig):
    """A reader config that adds a field of its own."""

    flavour: str = "plain"


@pytest.fixture
def flavoured_backend() -> Iterator[str]:
    name = "test_flavoured_reader"

    @register_reader(name)
    class FlavouredReader(SimpleStructMemReader):
        config_class = FlavouredConfig

    yield name
    READERS.unregister(name)


def test_cache_key_includes_fields_of_the_backend_config_class(flavoured_backend: str) -> None:
    def cfg(flavour: str) -> MemReaderConfigFactory:
        return MemReaderConfigFactory.from_dict(
            {"backend": flavoured_backend, "config": {"embedder": None, "flavour": flavour}}
        )

    sweet, sour = cfg("sweet"), cfg("sour")
    assert isinstance(sweet.config, FlavouredConfig) and sweet.config.flavour == "sweet"
    assert sweet.cache_key() != sour.cache_key()
    assert sweet.model_dump()["config"]["flavour"] == "sweet"
    again = MemReaderConfigFactory(**sweet.model_dump())
    assert isinstance(again.config, FlavouredConfig) and again.config.flavour == "sweet"
