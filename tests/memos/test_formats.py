"""The core reaches MemOS by name, never by import: ``TextualMemoryItem.from_dict`` and
``MemReaderConfigFactory`` take MemOS's dicts through the ``memos`` entries of
:data:`memreader.items.ITEM_FORMATS` and :data:`memreader.factory.CONFIG_FORMATS`, which a
plugin's format joins the same way; the folded-away packages are gone."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import memreader
from memreader.errors import InputError
from memreader.factory import CONFIG_FORMATS, MemReaderConfigFactory
from memreader.items import ITEM_FORMATS, TextualMemoryItem
from memreader.memos.formats import MEMOS_CONFIGS, MEMOS_ITEMS
from memreader.registry import RegistryError


@dataclass(frozen=True)
class ToyItemFormat:
    """Items as ``{"toy": text, "owner": user}``."""

    def recognizes(self, data: dict[str, Any]) -> bool:
        return set(data) == {"toy", "owner"}

    def read(
        self, data: dict[str, Any], metadata_fields: frozenset[str], source_fields: frozenset[str]
    ) -> dict[str, Any]:
        assert "user_id" in metadata_fields and "span" in source_fields
        meta = {"user_id": data["owner"], "session_id": "toy"}
        return {"id": f"toy-{data['toy']}", "memory": data["toy"], "metadata": meta}

    def write(self, data: dict[str, Any], status: str | None) -> dict[str, Any]:
        return {"toy": data["memory"], "owner": data["metadata"]["user_id"]}

    def invalid(self, where: str, why: str) -> InputError:
        return InputError(f"a toy item's {where}: {why}")


@dataclass
class ToyTranslation:
    config: dict[str, Any] = field(default_factory=dict)
    logged: int = 0

    def log(self) -> None:
        self.logged += 1


@dataclass
class ToyConfigFormat:
    """Reader configs as ``{"toy_window": N}``."""

    made: list[ToyTranslation] = field(default_factory=list)

    def recognizes(self, config: Mapping[str, Any]) -> bool:
        return "toy_window" in config

    def translate(self, config: Mapping[str, Any], *, fields: Collection[str]) -> ToyTranslation:
        assert "window" in fields
        made = ToyTranslation({"window": {"max_tokens": config["toy_window"]}})
        self.made.append(made)
        return made


@pytest.fixture
def toy_items() -> Iterator[ToyItemFormat]:
    fmt = ITEM_FORMATS.register("toy", ToyItemFormat())
    yield fmt
    ITEM_FORMATS.unregister("toy")


@pytest.fixture
def toy_configs() -> Iterator[ToyConfigFormat]:
    fmt = CONFIG_FORMATS.register("toy", ToyConfigFormat())
    yield fmt
    CONFIG_FORMATS.unregister("toy")


def test_the_package_reads_memos_dicts_with_no_import_of_memos() -> None:
    # A fresh interpreter: importing memreader leaves MemOS's package unloaded, and the first
    # MemOS item and config load it by name.
    script = textwrap.dedent(
        """
        import sys
        import memreader
        from memreader.items import TextualMemoryItem
        loaded = sorted(m for m in sys.modules if m.startswith("memreader.memos"))
        assert loaded == [], loaded
        item = TextualMemoryItem.from_dict({"memory": "I like tea"})
        config = memreader.MemReaderConfigFactory(config={"chunker": {"backend": "sentence",
                                                  "config": {"chunk_size": 512}}})
        print(item.memory, config.config.window.max_tokens, "memreader.memos" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["I", "like", "tea", "512", "True"]


def test_memos_registers_one_format_of_each_kind() -> None:
    assert ITEM_FORMATS.get("memos") is MEMOS_ITEMS
    assert CONFIG_FORMATS.get("memos") is MEMOS_CONFIGS
    with pytest.raises(RegistryError, match="item format 'memos' is already registered"):
        ITEM_FORMATS.register("memos", ToyItemFormat())


def test_a_plugin_item_format_is_read_and_written(toy_items: ToyItemFormat) -> None:
    item = TextualMemoryItem.from_dict({"toy": "I like tea", "owner": "u7"})
    assert (item.id, item.memory, item.metadata.user_id) == ("toy-I like tea", "I like tea", "u7")
    assert toy_items.write(item.to_dict(), None) == {"toy": "I like tea", "owner": "u7"}


def test_a_plugin_item_memreader_cannot_hold_raises_the_formats_typed_error(
    toy_items: ToyItemFormat,
) -> None:
    with pytest.raises(InputError, match=r"a toy item's metadata\.user_id: Input should be"):
        TextualMemoryItem.from_dict({"toy": "I like tea", "owner": 7})


def test_a_dict_no_format_recognizes_keeps_the_models_own_error(
    toy_items: ToyItemFormat,
) -> None:
    with pytest.raises(ValidationError, match="memory"):
        TextualMemoryItem.from_dict({"id": "x", "text": "I like tea"})


def test_a_plugin_config_format_is_translated_and_logged(toy_configs: ToyConfigFormat) -> None:
    config = MemReaderConfigFactory(backend="simple_struct", config={"toy_window": 640})
    assert config.config.window.max_tokens == 640
    assert [made.logged for made in toy_configs.made] == [1]


@pytest.mark.parametrize("old", ["memos_items", "memos_shapes"])
def test_the_folded_packages_are_gone(old: str) -> None:
    # Looked up in the package's own folder (an editable install of another checkout could
    # answer an import of the old name from there); a checkout that had the old packages may
    # keep their __pycache__ folders, which import as empty namespaces: no source is the test.
    assert PathFinder.find_spec("memreader.memos", memreader.__path__) is not None
    spec = PathFinder.find_spec(f"memreader.{old}", memreader.__path__)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    assert spec is None or spec.origin is None  # no module file of that name
    assert not [path for folder in folders for path in Path(folder).rglob("*.py")]
