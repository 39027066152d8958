"""The MCP client configurations on ``docs/integrations/coding-agents.md`` start ``memreader
mcp`` as each client would (issue 43): every block marked ``<!-- readme-test: mcp-client
CLIENT -->`` is read the way CLIENT reads it (:mod:`tests.mcp.client_configs`), and the command,
arguments and environment it yields are started by the MCP SDK's stdio client, a bare
``memreader`` found on ``PATH``, from a folder that is not the checkout. The server must list its
tools, serve the user the entry names, recall what it was told to remember with its source, and
keep it in the store the entry points at.

The client's own environment here is a test's: ``HOME`` a temporary folder (so ``~`` and the
default data folder land in it), ``PATH`` this virtual environment's ``bin`` first,
``PYTHONPATH`` this checkout, and ``$MEMREADER_CONFIG`` a reader with the ``hash`` embedder
(an entry's own ``env`` wins over it; a config file an entry names is written with the same
reader). Entries whose launches are identical share one server: one start per distinct launch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from mcp import Client, StdioServerParameters

from memreader.cli.mcp import CONFIG_ENV
from memreader.front.home import HOME_ENV, data_home
from tests.mcp.client_configs import (
    READERS,
    Launch,
    SnippetError,
    claude_code_json,
    claude_mcp_add,
    json_servers,
)
from tests.mcp.mcp_servers import READ_S, ROOT, answer, run

PAGE = ROOT / "docs" / "integrations" / "coding-agents.md"
BIN = Path(sys.executable).parent
#: The user every entry serves (Claude Code's shared ``.mcp.json`` names ``${USER}``).
USER = "emily"
MARKED = re.compile(
    r"^<!--\s*readme-test:\s*mcp-client\s+(\S+)\s*-->\s*\n```(\w+)\n(.*?)^```", re.M | re.S
)
CHAT = [
    {"role": "user", "content": "I moved to Lisbon and I want piano lessons."},
    {"role": "assistant", "content": "Classical or jazz?"},
]


def client_environment(home: Path) -> dict[str, str]:
    """What the client passes on besides an entry's ``env`` (the SDK adds its own few
    variables, ``HOME`` and ``PATH`` among them, under these)."""
    return {
        "HOME": str(home),
        "USER": USER,
        "PATH": f"{BIN}{os.pathsep}{os.defpath}",
        "PYTHONPATH": str(ROOT),
        "MEMREADER_CONFIG": str(home / "hash-reader.yaml"),
        "HF_HUB_OFFLINE": "1",
    }


def snippets() -> list[tuple[str, int, Launch]]:
    """Each marked block of the page: its client, its line and the launch it yields."""
    text = PAGE.read_text(encoding="utf-8")
    environ = client_environment(Path("/home") / USER)
    found = []
    for match in MARKED.finditer(text):
        client, _, body = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        found.append((client, line, READERS[client](body, environ)))
    return found


def launches() -> dict[Launch, list[str]]:
    """Each distinct launch, with the blocks (``client@line``) that yield it."""
    grouped: dict[Launch, list[str]] = {}
    for client, line, launch in snippets():
        grouped.setdefault(launch, []).append(f"{client}@{line}")
    return grouped


LAUNCHES = launches()


def test_the_page_configures_every_client() -> None:
    clients = {client for client, _, _ in snippets()}
    assert clients == set(READERS)
    # test_readme leaves marked command lines to this test, which reads this page only.
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    marked = {page for page in pages if "readme-test: mcp-client" in page.read_text("utf-8")}
    assert marked == {PAGE}
    # The shared project file, expanded for its user, starts what the personal entries start.
    assert len(LAUNCHES) == 2, LAUNCHES  # the plain entry, and the one with another store


def test_readers_refuse_what_their_client_would_not_start() -> None:
    with pytest.raises(SnippetError, match="transport 'http' is not stdio"):
        claude_mcp_add("claude mcp add --transport http memreader -- memreader mcp")
    with pytest.raises(SnippetError, match="--header is no option of a stdio server"):
        claude_mcp_add("claude mcp add --header A:b memreader -- memreader mcp")
    with pytest.raises(SnippetError, match="type must be 'stdio', got None"):
        json_servers('{"servers": {"memreader": {"command": "memreader"}}}', "vscode", "servers")
    with pytest.raises(SnippetError, match=r"no mcpServers\.memreader entry"):
        json_servers('{"servers": {"memreader": {"command": "memreader"}}}', "cursor")
    with pytest.raises(SnippetError, match="expanded by the client"):
        json_servers('{"mcpServers": {"memreader": {"command": "${env:X}"}}}', "cursor")
    entry = '{"mcpServers": {"memreader": {"command": "memreader", "args": ["${NOBODY}"]}}}'
    with pytest.raises(SnippetError, match=r"\$\{NOBODY\} is not set and has no default"):
        claude_code_json(entry, {})


def _expected_store(home: Path, launch: Launch, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the server keeps its memories: ``memories.db`` in the data folder its
    environment names (``$MEMREADER_HOME``, else the default under ``$HOME``)."""
    with monkeypatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.delenv("XDG_DATA_HOME", raising=False)
        patch.delenv("MEMREADER_HOME", raising=False)
        for name, value in launch.env:
            patch.setenv(name, value)
        return data_home() / "memories.db"


def _write_hash_readers(env: dict[str, str], home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader config ``$MEMREADER_CONFIG`` names, written with the ``hash`` embedder (and
    no store: the data folder decides)."""
    with monkeypatch.context() as patch:
        patch.setenv("HOME", str(home))
        path = Path(os.path.expanduser(env["MEMREADER_CONFIG"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    reader = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}
    path.write_text(yaml.safe_dump(reader), encoding="utf-8")


@pytest.fixture
def client_home(tmp_path: Path) -> Path:
    """The client's ``$HOME``."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.mark.timeout(180)
@pytest.mark.parametrize("launch", list(LAUNCHES), ids=lambda launch: "+".join(LAUNCHES[launch]))
def test_the_entry_starts_a_server_that_remembers_and_recalls(
    launch: Launch, client_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A misspelt variable would be ignored and the default taken: each is one memreader reads.
    assert {name for name, _ in launch.env} <= {HOME_ENV, CONFIG_ENV}
    env = {**client_environment(client_home), **dict(launch.env)}
    _write_hash_readers(env, client_home, monkeypatch)
    # A bare command is found on PATH, as the client finds it: this environment's script.
    assert shutil.which(launch.command, path=env["PATH"]) == str(BIN / "memreader")
    store = _expected_store(client_home, launch, monkeypatch)
    elsewhere = tmp_path / "elsewhere"  # clients start servers in a folder of their own
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=launch.command, args=list(launch.args), env=env, cwd=str(elsewhere)
    )

    async def talk() -> None:
        async with Client(params, read_timeout_seconds=READ_S) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"remember", "recall", "context", "forget"} <= tools
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            assert listed == [
                f"memreader://users/{USER}/memory/index.md",
                f"memreader://users/{USER}/memu/memory.md",
                f"memreader://users/{USER}/memu/skill.md",
            ]
            said = {"messages": CHAT, "session_id": "chat-1"}
            stored = answer(await client.call_tool("remember", said))
            assert stored["counts"] == {"ADD": 1}
            found = answer(await client.call_tool("recall", {"query": "Lisbon piano", "k": 3}))
            best = found["memories"][0]
            assert best["id"] == stored["changes"][0]["memory_id"]
            assert best["session_id"] == "chat-1"
            source = best["sources"][0]
            assert (source["role"], source["message_index"]) == ("user", 0)
            assert source["quote"] == CHAT[0]["content"]

    run(talk())
    assert store.is_file(), f"no store at {store}"
    assert not list(elsewhere.iterdir()), "the server wrote into the folder it was started in"


def _failed_start(env: dict[str, str], *args: str) -> str:
    """``memreader mcp --user-id emily ARGS`` that fails before the protocol: its stderr."""
    done = subprocess.run(
        [str(BIN / "memreader"), "mcp", "--user-id", USER, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 2 and done.stdout == "", done
    return done.stderr


@pytest.mark.timeout(120)
def test_a_config_the_environment_names_that_cannot_be_read_is_one_line_naming_it(
    client_home: Path,
) -> None:
    env = {**client_environment(client_home), "MEMREADER_CONFIG": "~/no-such-reader.yaml"}
    missing = client_home / "no-such-reader.yaml"  # the ~ expanded, as a client does not
    assert _failed_start(env) == (
        f"memreader: error: $MEMREADER_CONFIG: cannot read config '{missing}': "
        "No such file or directory\n"
    )


@pytest.mark.timeout(120)
def test_config_wins_over_the_environment(
    client_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = client_environment(client_home)
    _write_hash_readers(env, client_home, monkeypatch)
    given = client_home / "given.yaml"
    assert _failed_start(env, "--config", str(given)) == (
        f"memreader: error: cannot read config '{given}': No such file or directory\n"
    )
