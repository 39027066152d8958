"""The one registry: its rules, the LLM and embedder backends on it, and plugins found through
the ``memreader.plugins`` entry-point group (a real package written to a temporary folder)."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memreader import MemReaderConfigFactory, MemReaderFactory
from memreader.embedders import EMBEDDERS, EmbedderConfig, build_embedder, register_embedder
from memreader.errors import ConfigError
from memreader.llms import (
    LLM_BACKENDS,
    BaseLLMClient,
    LLMConfig,
    RawCompletion,
    available_llm_backends,
    build_llm,
    register_llm,
)
from memreader.registry import PLUGIN_GROUP, Registry, RegistryError, load_plugins
from memreader.steps.registry import STEPS
from memreader.testing import HashEmbedder
from tests.common import INFO
from tests.llm_server import finishes_within

CHAT = [[{"role": "user", "content": "I keep bees behind the barn.", "chat_time": "2026-05-01"}]]


# -- the rules -----------------------------------------------------------------------------------


class Red:
    pass


class Blue:
    pass


def test_the_same_object_twice_is_a_no_op_and_names_ignore_case() -> None:
    colors: Registry[type[Any]] = Registry("color")
    assert colors.register("Red", Red) is Red
    assert colors.register(" red ", Red) is Red  # the same again: a no-op
    assert colors.get("RED") is Red and "rEd" in colors
    assert colors.names() == ["red"]


def test_a_different_object_under_a_taken_name_raises_naming_both() -> None:
    colors: Registry[type[Any]] = Registry("color")
    colors.register("red", Red)
    with pytest.raises(RegistryError) as info:
        colors.register("RED", Blue)
    assert str(info.value) == (
        f"color 'red' is already registered to {__name__}.Red; "
        f"cannot register {__name__}.Blue under the same name"
    )
    assert isinstance(info.value, ConfigError)
    assert colors.get("red") is Red, "the first registration stays"


def test_unknown_name_is_a_config_error_listing_the_known_ones() -> None:
    colors: Registry[type[Any]] = Registry("color")
    colors.register("red", Red)
    colors.register("blue", Blue)
    with pytest.raises(ConfigError, match=r"^unknown color 'green'; known: blue, red$"):
        colors.get("green")


#: Filled by the module the lazy test imports.
LAZY: Registry[type[Any]] = Registry("color", lazy={"lazy-red": "memreader_lazy_color"})


def test_built_ins_are_imported_on_first_lookup(tmp_path: Path) -> None:
    module = "memreader_lazy_color"
    source = "from tests.test_registry import LAZY, Red\nLAZY.register('lazy-red', Red)\n"
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        assert "lazy-red" in LAZY.names()  # listed before it is imported
        assert module not in sys.modules
        assert LAZY.get("Lazy-Red") is Red
        assert module in sys.modules
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(module, None)
        LAZY.unregister("lazy-red")


# -- LLM backends and embedders on it ------------------------------------------------------------


class EchoClient(BaseLLMClient):
    def _send(self, messages: Any, schema: Any, schema_name: str) -> RawCompletion:
        return RawCompletion(content=json.dumps({"echo": messages[-1]["content"]}))

    async def _asend(self, messages: Any, schema: Any, schema_name: str) -> RawCompletion:
        return self._send(messages, schema, schema_name)


class OtherClient(EchoClient):
    pass


def test_llm_backends_follow_the_rules() -> None:
    register_llm("Echo-Registry")(EchoClient)
    try:
        register_llm("echo-registry")(EchoClient)  # again: a no-op
        assert EchoClient.backend == "echo-registry"
        with pytest.raises(RegistryError, match="LLM backend 'echo-registry' is already"):
            register_llm("echo-registry")(OtherClient)  # was: silently replaced
        assert LLM_BACKENDS.get("ECHO-REGISTRY") is EchoClient
        client = build_llm(LLMConfig(backend="Echo-Registry", model="e"))
        assert isinstance(client, EchoClient)
        assert client.complete([{"role": "user", "content": "hi"}], schema={}).parsed == {
            "echo": "hi"
        }
    finally:
        LLM_BACKENDS.unregister("echo-registry")


def test_unknown_llm_backend_is_refused_by_the_config_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        LLMConfig(backend="nope", model="m")
    message = str(info.value)
    assert "backend" in message and "unknown LLM backend 'nope'" in message
    for known in ("ollama", "openai", "scripted"):
        assert known in message and known in available_llm_backends()


def test_llm_config_checks_a_name_without_importing_the_backend() -> None:
    code = (
        "import sys\n"
        "from memreader.llms import LLMConfig\n"
        "LLMConfig(backend='ollama', model='m')\n"
        "assert 'memreader.llms.ollama_client' not in sys.modules\n"
        "assert 'ollama' not in sys.modules\n"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


class NoConfigEmbedder:
    pass


def test_embedder_backends_follow_the_rules() -> None:
    assert EMBEDDERS.get("HASH") is HashEmbedder
    assert register_embedder("hash")(HashEmbedder) is HashEmbedder  # again: a no-op

    class Impostor(HashEmbedder):
        pass

    with pytest.raises(RegistryError, match="embedder backend 'hash' is already registered"):
        register_embedder("hash")(Impostor)
    with pytest.raises(RegistryError, match="needs a pydantic `config_class`"):
        register_embedder("no-config")(NoConfigEmbedder)
    with pytest.raises(ConfigError, match=r"unknown embedder backend 'nope'; known: .*hash"):
        build_embedder(EmbedderConfig(backend="nope"))


# -- plugins through the entry-point group -------------------------------------------------------


PLUGIN = """
import hashlib

from pydantic import BaseModel, ConfigDict

from memreader.embedders import register_embedder
from memreader.llms import BaseLLMClient, RawCompletion, register_llm
from memreader.pipeline import Step
from memreader.steps.registry import STEPS


class ConstantConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float = 0.5


@register_embedder("plugin-constant")
class ConstantEmbedder:
    config_class = ConstantConfig
    max_input_tokens = 1000
    batch_size = 8

    def __init__(self, config):
        self.name = f"plugin-constant:{config.value}"
        self.dimension = 2
        self.value = config.value

    def count_tokens(self, text):
        return len(text.split())

    def embed(self, texts):
        return [[self.value, 1.0] for _ in texts]


@register_llm("plugin-echo")
class EchoClient(BaseLLMClient):
    def _send(self, messages, schema, schema_name):
        return RawCompletion(content='{"memory_list": [], "summary": "nothing"}')

    async def _asend(self, messages, schema, schema_name):
        return self._send(messages, schema, schema_name)


@STEPS.register("plugin-shout")
class Shout(Step):
    name = "plugin-shout"
    requires = ("items",)
    produces = ("items",)

    def run(self, state, runtime):
        for items in state.items:
            for item in items:
                item.metadata.tags.append("shouted")
"""


@pytest.fixture
def plugin_package(tmp_path: Path) -> Iterator[Path]:
    """A package ``memreader_test_plugin`` with a ``memreader.plugins`` entry point, on
    ``sys.path`` for the test; everything it registers is forgotten afterwards."""
    (tmp_path / "memreader_test_plugin").mkdir()
    (tmp_path / "memreader_test_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "memreader_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memreader-test-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""
            [{PLUGIN_GROUP}]
            test-plugin = memreader_test_plugin
        """),
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("memreader_test_plugin", None)
        EMBEDDERS.unregister("plugin-constant")
        LLM_BACKENDS.unregister("plugin-echo")
        STEPS.unregister("plugin-shout")
        importlib.invalidate_caches()
        load_plugins(force=True)


def test_an_entry_point_plugin_brings_an_embedder_an_llm_backend_and_a_step(
    plugin_package: Path,
) -> None:
    failures = load_plugins(force=True)
    assert "test-plugin" not in failures
    assert "memreader_test_plugin" in sys.modules
    for registry, name in (
        (EMBEDDERS, "plugin-constant"),
        (LLM_BACKENDS, "plugin-echo"),
        (STEPS, "plugin-shout"),
    ):
        assert name in registry.names()

    # A reader config that names all three works, from YAML-shaped data.
    cfg = MemReaderConfigFactory.from_dict(
        {
            "config": {
                "embedder": {"backend": "plugin-constant", "config": {"value": 0.25}},
                "llm": {"backend": "plugin-echo", "model": "m"},
                "fine": {"empty_window": "fallback"},
                "pipeline": {"insert_after": {"embed": [{"step": "plugin-shout"}]}},
            }
        }
    )
    reader = MemReaderFactory.from_config(cfg)
    assert "plugin-shout" in str(reader.pipeline)
    (items,) = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert items and all("shouted" in item.metadata.tags for item in items)
    assert all(item.metadata.embedding == [0.25, 1.0] for item in items)


def test_a_plugin_that_looks_names_up_while_it_loads_does_not_deadlock(tmp_path: Path) -> None:
    # Validating an LLMConfig checks the backend name, which loads the plugins: from inside
    # the plugin's own import, that used to wait forever on the plugin loader's lock.
    (tmp_path / "memreader_eager_plugin.py").write_text(
        "from memreader.llms import LLMConfig\nCONFIG = LLMConfig(backend='ollama', model='m')\n",
        encoding="utf-8",
    )
    info = tmp_path / "memreader_eager_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memreader-eager-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[{PLUGIN_GROUP}]\neager = memreader_eager_plugin\n", encoding="utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    finished = False
    try:
        failures = finishes_within(60, lambda: load_plugins(force=True))
        finished = True
        assert "eager" not in failures
        assert sys.modules["memreader_eager_plugin"].CONFIG.backend == "ollama"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("memreader_eager_plugin", None)
        importlib.invalidate_caches()
        if finished:  # a deadlocked loader still holds its lock: calling it again would hang
            load_plugins(force=True)


def test_a_broken_plugin_is_reported_never_fatal(tmp_path: Path) -> None:
    info = tmp_path / "memreader_broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memreader-broken-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[{PLUGIN_GROUP}]\nbroken = memreader_no_such_module\n", encoding="utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        failures = load_plugins(force=True)
        assert failures["broken"].startswith("ModuleNotFoundError")
        with pytest.raises(ConfigError, match=r"plugins that failed to load: broken"):
            EMBEDDERS.get("still-nope")
        assert build_embedder({"backend": "hash"}).name == "hash:16"
    finally:
        sys.path.remove(str(tmp_path))
        importlib.invalidate_caches()
    # Uninstalled, it is no longer named (it was, in every later lookup's error).
    assert "broken" not in load_plugins(force=True)
    with pytest.raises(ConfigError) as info:
        EMBEDDERS.get("still-nope")
    assert "failed to load" not in str(info.value)
