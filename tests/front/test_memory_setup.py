"""How ``Memory`` is set up: ``Memory()`` in the per-user data folder with the bundled local
embedder, a YAML or dict config, and which store wins."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, ConfigError, Memory, MemReaderConfigFactory
from memreader.front import data_home, default_store_url


def test_memory_with_no_arguments_uses_the_data_folder_and_the_local_embedder(home: Path) -> None:
    with Memory() as m:
        assert m.store_url == f"sqlite:///{home / 'memories.db'}"
        assert m.config.config.embedder is not None
        assert m.config.config.embedder.backend == "local"
        result = m.add(
            [{"role": "user", "content": "I moved to Lisbon and want piano lessons."}],
            user_id="emily",
        )
        assert result.counts == {"ADD": 1}
        assert len(result.items[0].metadata.embedding or []) == 384
        hits = m.search("where does she live?", user_id="emily", mode="vector")
        assert [h.memory.id for h in hits] == [result.items[0].id]
    assert (home / "memories.db").is_file()


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG rule is for Linux")
def test_the_data_folder_follows_the_xdg_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMREADER_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert data_home() == tmp_path / ".local" / "share" / "memreader"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert data_home() == tmp_path / ".local" / "share" / "memreader"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store_url() == f"sqlite:///{tmp_path / 'data' / 'memreader' / 'memories.db'}"
    monkeypatch.setenv("MEMREADER_HOME", str(tmp_path / "mine"))
    assert data_home() == tmp_path / "mine"


def test_a_yaml_config_with_a_relative_store_is_relative_to_its_folder(
    tmp_path: Path, home: Path
) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "reader.yaml").write_text(
        "backend: simple_struct\nconfig:\n  store: sqlite:///mem.db\n  embedder:\n"
        "    backend: hash\n",
        encoding="utf-8",
    )
    with Memory(str(folder / "reader.yaml")) as m:
        assert m.store_url == f"sqlite:///{folder / 'mem.db'}"
        # the reader's own steps (dedup, reconcile) see the same store
        store = m.config.config.store
        assert store is not None and store.get_secret_value() == m.store_url
        assert m.add("I live in Porto.", user_id="ana").counts == {"ADD": 1}
    assert (folder / "mem.db").is_file()
    assert not home.exists()


def test_the_store_argument_wins_over_the_configs(tmp_path: Path, home: Path) -> None:
    config = MemReaderConfigFactory(
        config={"embedder": {"backend": "hash"}, "store": f"sqlite:///{tmp_path / 'a.db'}"}
    )
    with Memory(config, store=f"sqlite:///{tmp_path / 'b.db'}") as m:
        m.add("I live in Porto.", user_id="ana")
    assert (tmp_path / "b.db").is_file() and not (tmp_path / "a.db").exists()


def test_categories_off_in_the_config_means_no_keeper(tmp_path: Path, home: Path) -> None:
    config: dict[str, Any] = {
        "config": {"embedder": {"backend": "hash"}, "categories": {"enabled": False}}
    }
    with Memory(config, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        m.add("I live in Porto.", user_id="ana")
        assert m.store.category_keeper is None
        assert m.categories("ana") == []


def test_an_invalid_config_is_a_config_error(home: Path) -> None:
    with pytest.raises(ConfigError, match="window"):
        Memory({"config": {"window": {"max_tokens": "many"}}})
    with pytest.raises(ConfigError):
        Memory({"config": {"embedder": {"backend": "hash"}}}, store="not-a-url")


def test_a_config_without_an_embedder_searches_text_only(tmp_path: Path, home: Path) -> None:
    with Memory({"config": {"embedder": None}}, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        result = m.add("I live in Porto.", user_id="ana")
        assert result.items[0].metadata.embedding is None
        hits = m.search("Porto", user_id="ana")
        assert [h.memory.id for h in hits] == [result.items[0].id]
        assert hits[0].score.similarity is None


# -- Memory.from_config: a flat dict, as mem0 users write it ----------------------------------


def test_from_config_takes_a_flat_dict(tmp_path: Path, home: Path) -> None:
    flat = {
        "store": f"sqlite:///{tmp_path / 'flat.db'}",
        "embedder": {"backend": "hash"},
        "lifecycle": {"max_active": 5},
        "working_memory": 2,
        "backend": "simple_struct",
    }
    with Memory.from_config(flat) as m:
        assert m.store_url == flat["store"] and m.working is not None
        assert m.config.config.lifecycle is not None and m.config.config.lifecycle.max_active == 5
        m.add_memory("Ana is vegetarian.", user_id="ana")
    assert (tmp_path / "flat.db").is_file() and not (home / "memories.db").exists()


def test_from_config_takes_todays_shapes_too(tmp_path: Path, home: Path) -> None:
    nested = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}
    with Memory.from_config(nested) as m:
        assert m.store_url.endswith("memories.db") and m.config.config.embedder is not None


@pytest.mark.parametrize("key", ["vector_store", "stores"])
def test_from_config_names_an_unknown_key(key: str, home: Path) -> None:
    with pytest.raises(ConfigError, match=f"{key}: Extra inputs are not permitted"):
        Memory.from_config({"embedder": {"backend": "hash"}, key: {"provider": "qdrant"}})


def test_async_memory_from_config_takes_a_flat_dict(tmp_path: Path, home: Path) -> None:
    m = AsyncMemory.from_config({"store": "sqlite://:memory:", "embedder": {"backend": "hash"}})
    assert m.memory.store_url == "sqlite://:memory:"
    m.memory.close()
