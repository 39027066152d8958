"""A SQLite store's folder is made when it is opened (nested missing folders included), and a
folder that cannot be made is a :class:`~memreader.errors.StoreError` naming it, not SQLite's
"unable to open database file"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memreader import Memory, StoreError
from memreader.stores import open_store


def test_a_store_in_missing_nested_folders_is_created(tmp_path: Path) -> None:
    file = tmp_path / "a" / "b" / "c" / "memories.db"
    with open_store(f"sqlite:///{file}", text_only=True) as store:
        event = store.add_memory("Ana lives in Porto.", user_id="ana")
    assert event.event == "ADD" and file.is_file()
    with open_store(f"sqlite:///{file}", text_only=True) as again:  # and opens again
        assert again.get(event.memory_id, user_id="ana") is not None


def test_memory_makes_the_folder_of_the_store_it_is_given(tmp_path: Path) -> None:
    file = tmp_path / "notes" / "memreader" / "m.db"
    config = {"config": {"embedder": {"backend": "hash"}}}
    with Memory(config, store=f"sqlite:///{file}") as m:
        m.add("I live in Porto.", user_id="ana")
    assert file.is_file()


def test_a_file_in_the_way_is_a_store_error_naming_the_folder(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("not a folder", encoding="utf-8")
    file = tmp_path / "blocker" / "memories.db"
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{file}", text_only=True)
    message = str(caught.value)
    assert f"cannot make the folder {tmp_path / 'blocker'}" in message
    assert "unable to open database file" not in message


def test_a_file_in_the_way_higher_up_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("not a folder", encoding="utf-8")
    file = tmp_path / "blocker" / "deeper" / "memories.db"
    with pytest.raises(StoreError, match=r"cannot make the folder .*blocker.deeper"):
        open_store(f"sqlite:///{file}", text_only=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_folder_without_permission_is_a_store_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(StoreError, match=r"cannot make the folder .*locked.new"):
            open_store(f"sqlite:///{locked / 'new' / 'm.db'}", text_only=True)
    finally:
        locked.chmod(0o700)
