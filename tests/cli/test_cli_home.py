"""One home: with ``MEMREADER_HOME`` set and no store named anywhere, what ``Memory()`` adds is
found by ``memreader search`` (the console script's module, as a subprocess) and by the MCP
server's search tool (``memreader mcp`` over stdio, driven by the SDK's client). The three
use the ``hash`` embedder through a reader config that names no store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader import Memory
from tests.mcp.mcp_servers import answer, run, stdio_client

ROOT = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "MEMREADER_HOME": str(home),
    }
    env.pop("MEMREADER_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "memreader.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=300,
        check=False,
    )


@pytest.mark.timeout(300)
def test_memory_cli_and_mcp_share_the_home_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "nested"  # not there yet: the first surface makes it
    monkeypatch.setenv("MEMREADER_HOME", str(home))
    monkeypatch.delenv("MEMREADER_STORE", raising=False)
    config = tmp_path / "hash.yaml"
    config.write_text(yaml.safe_dump({"config": {"embedder": {"backend": "hash"}}}), "utf-8")
    with Memory(str(config)) as m:
        added = m.add("I moved to Lisbon and I want piano lessons.", user_id="emily")
    [event] = added.events
    assert (home / "memories.db").is_file()

    found = _cli(
        home, "search", "Lisbon piano", "--user-id", "emily", "--config", str(config), "--json"
    )
    assert found.returncode == 0, found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)["hits"]] == [event.memory_id]

    async def recall() -> dict[str, Any]:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            return answer(await client.call_tool("recall", {"query": "Lisbon piano", "k": 3}))

    hits = run(recall())
    assert [hit["id"] for hit in hits["memories"]] == [event.memory_id]


def test_a_store_command_without_a_home_store_names_the_missing_file(tmp_path: Path) -> None:
    home = tmp_path / "empty-home"
    done = _cli(home, "history", "some-id", "--user-id", "emily")
    assert done.returncode == 2
    assert f"no memory store at sqlite:///{home / 'memories.db'} (no such file)" in done.stderr
