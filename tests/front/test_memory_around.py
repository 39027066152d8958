"""``Memory(reader=..., store=<an open store>)``: a ``Memory`` around a reader built already and
a store opened already (a server that built its reader first; an embedding app), which it uses
as they are and closes with itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memreader import Memory
from memreader.errors import InputError
from memreader.factory import MemReaderConfigFactory
from memreader.stores import open_store


def test_memory_uses_and_closes_the_reader_and_store_it_is_given(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'given.db'}"
    reader = MemReaderConfigFactory.from_dict(fast_config).build()
    store = open_store(url, **reader.runtime.store_embedding())
    closed: list[str] = []
    plain_close = store.close
    store.close = lambda: (closed.append("store"), plain_close())[1]  # type: ignore[method-assign]
    memory = Memory(
        {**fast_config, "config": {**fast_config["config"], "store": url}},
        store=store,
        reader=reader,
    )
    assert memory.reader is reader and memory.store is store and memory.store_url == url
    memory.add("I live in Porto.", user_id="ana")
    assert [hit.text for hit in memory.search("Porto", user_id="ana")] == ["user: I live in Porto."]
    memory.close()
    assert closed == ["store"]


def test_an_open_store_takes_no_store_options(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'o.db'}", text_only=True)
    with store, pytest.raises(InputError, match="open store"):
        Memory(fast_config, store=store, store_options={"gamma": 0.5})
