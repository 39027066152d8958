"""The store commands reach their store through one door (a ``Memory``, from
:func:`memreader.cli.store_access.open_cli_memory`): a search with another embedder than the
one the memories were embedded with says so on stderr (once), a text-only search does not need
one, and a store that does not exist is one line, for every command that needs one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WARNING = "WARNING memreader.stores.embedder_rules:"


def memreader(*argv: str) -> subprocess.CompletedProcess[str]:
    """``memreader ARGV`` in a process of its own (its logging set up as a user's is)."""
    return subprocess.run(
        [sys.executable, "-m", "memreader.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        timeout=300,
        check=False,
    )


def hash_config(tmp_path: Path, dimension: int) -> str:
    """A reader config whose embedder is ``hash:<dimension>``."""
    path = tmp_path / f"hash{dimension}.yaml"
    embedder = {"backend": "hash", "config": {"dimension": dimension}}
    path.write_text(yaml.safe_dump({"config": {"embedder": embedder}}), encoding="utf-8")
    return str(path)


@pytest.fixture
def stored(tmp_path: Path) -> str:
    """A store holding one memory of ana's, embedded by ``hash:16``."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    added = memreader(
        "add", "Ana lives in Porto", "--store", url, "--user-id", "ana",
        "--config", hash_config(tmp_path, 16),
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    return url


def test_search_with_another_model_says_so_on_stderr(stored: str, tmp_path: Path) -> None:
    other = hash_config(tmp_path, 8)
    found = memreader(
        "search", "Porto", "--store", stored, "--user-id", "ana", "--config", other, "--json"
    )
    assert found.returncode == 0, found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)["hits"]]  # full text still finds it
    said = [line for line in found.stderr.splitlines() if line.startswith(WARNING)]
    assert len(said) == 1
    assert "'hash:16' (1)" in said[0] and "'hash:8'" in said[0]


def test_search_with_the_same_model_or_text_only_says_nothing(stored: str, tmp_path: Path) -> None:
    same = hash_config(tmp_path, 16)
    for flags in (["--config", same], ["--no-embedding"], ["--mode", "text"]):
        found = memreader("search", "Porto", "--store", stored, "--user-id", "ana", *flags)
        assert found.returncode == 0, found.stderr
        assert "Ana lives in Porto" in found.stdout
        assert found.stderr == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "Porto", "--no-embedding"],
        ["history", "some-id"],
        ["forget", "--source", "session:s1"],
        ["update", "some-id", "new text", "--no-embedding"],
        ["delete", "some-id"],
    ],
)
def test_every_store_command_refuses_a_store_that_does_not_exist(
    argv: list[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    result = memreader(*argv, "--store", url, "--user-id", "ana")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(f"no memory store at {url} (no such file)")
    assert not (tmp_path / "none.db").exists()
