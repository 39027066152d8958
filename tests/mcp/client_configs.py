"""How each MCP client reads its entry for a local (stdio) server: the command it starts, with
which arguments and which environment, for the snippets of ``docs/integrations/coding-agents.md``.

Each reader follows its client's documented format (the key it looks under, the fields it
takes) and refuses what the client would not start as a stdio server (another transport, no
command) or what these tests cannot reproduce: a ``$`` that a client other than Claude Code
would expand in its own way (Cursor's ``${env:NAME}``, Gemini CLI's ``$NAME``).

>>> claude_mcp_add("claude mcp add -e A=1 -s user memreader -- memreader mcp --user-id emily")
Launch(command='memreader', args=('mcp', '--user-id', 'emily'), env=(('A', '1'),))
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

#: The name every snippet gives the server.
SERVER = "memreader"


class SnippetError(AssertionError):
    """A snippet its client would not start as written."""


@dataclass(frozen=True)
class Launch:
    """What a client runs: ``command`` (looked up on ``PATH`` when bare), its ``args``, and the
    variables it sets over the environment it passes on."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, entry: Any, client: str) -> Launch:
        """The launch a ``{"command", "args", "env"}`` entry describes (types checked)."""
        if not isinstance(entry, Mapping):
            raise SnippetError(f"{client}: the {SERVER!r} entry is not an object")
        command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
        if not isinstance(command, str) or not command:
            raise SnippetError(f"{client}: no command (a stdio server needs one)")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise SnippetError(f"{client}: args must be a list of strings")
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise SnippetError(f"{client}: env must map names to strings")
        return cls(command, tuple(args), tuple(sorted(env.items())))

    def strings(self) -> list[str]:
        return [self.command, *self.args, *(value for _, value in self.env)]


def _literal(launch: Launch, client: str) -> Launch:
    """``launch``, refused when it holds a ``$`` its client would expand."""
    if any("$" in text for text in launch.strings()):
        raise SnippetError(f"{client}: a '$' here would be expanded by the client, not the test")
    return launch


def _entry(data: Any, key: str, client: str) -> Any:
    servers = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping) or SERVER not in servers:
        raise SnippetError(f"{client}: no {key}.{SERVER} entry")
    return servers[SERVER]


def json_servers(text: str, client: str, key: str = "mcpServers") -> Launch:
    """The entry under ``key`` (``mcpServers``; VS Code: ``servers``) of a JSON file; its
    ``type``, when given, must be ``stdio`` (VS Code requires it)."""
    entry = _entry(json.loads(text), key, client)
    kind = entry.get("type") if isinstance(entry, Mapping) else None
    if kind != "stdio" and (kind is not None or key == "servers"):
        raise SnippetError(f"{client}: type must be 'stdio', got {kind!r}")
    return _literal(Launch.of(entry, client), client)


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def claude_expand(text: str, environ: Mapping[str, str]) -> str:
    """``text`` with Claude Code's ``${VAR}`` and ``${VAR:-default}`` replaced from ``environ``;
    a variable neither set nor defaulted fails, as Claude Code refuses such a ``.mcp.json``.

    >>> claude_expand("${USER}/${NOPE:-x}", {"USER": "emily"})
    'emily/x'
    """

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is None:
            raise SnippetError(f"claude-code: ${{{name}}} is not set and has no default")
        return default

    return _VARIABLE.sub(value, text)


def claude_code_json(text: str, environ: Mapping[str, str]) -> Launch:
    """A ``.mcp.json`` entry with Claude Code's variables expanded in its command, args and env."""
    entry = _entry(json.loads(text), "mcpServers", "claude-code")
    kind = entry.get("type", "stdio") if isinstance(entry, Mapping) else None
    if kind != "stdio":
        raise SnippetError(f"claude-code: type must be 'stdio', got {kind!r}")
    launch = Launch.of(entry, "claude-code")
    return Launch(
        claude_expand(launch.command, environ),
        tuple(claude_expand(arg, environ) for arg in launch.args),
        tuple((name, claude_expand(value, environ)) for name, value in launch.env),
    )


def codex_toml(text: str) -> Launch:
    """The ``[mcp_servers.memreader]`` table of Codex's ``config.toml``."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    entry = _entry(tomllib.loads(text), "mcp_servers", "codex")
    return _literal(Launch.of(entry, "codex"), "codex")


def _cli_add(text: str, program: str, options: Mapping[str, str]) -> Launch:
    """``PROGRAM mcp add [OPTIONS] memreader -- COMMAND [ARGS...]`` as the shell splits it;
    ``options`` maps each option a stdio server may take to what it sets (``env``, or
    ``stdio`` for a transport that must be stdio, or ``""``: taken, no effect on the launch)."""
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    if words[:3] != [program, "mcp", "add"] or "--" not in words:
        raise SnippetError(f"{program}: not '{program} mcp add ... -- COMMAND'")
    cut = words.index("--")
    before, command = words[3:cut], words[cut + 1 :]
    env: dict[str, str] = {}
    names: list[str] = []
    while before:
        word = before.pop(0)
        if not word.startswith("-"):
            names.append(word)
            continue
        option, _, value = word.partition("=")
        if option not in options:
            raise SnippetError(f"{program}: {option} is no option of a stdio server")
        value = value or (before.pop(0) if before else "")
        if options[option] == "env":
            name, equals, setting = value.partition("=")
            if not equals:
                raise SnippetError(f"{program}: {option} takes KEY=value, got {value!r}")
            env[name] = setting
        elif options[option] == "stdio" and value != "stdio":
            raise SnippetError(f"{program}: transport {value!r} is not stdio")
    if names != [SERVER] or not command:
        raise SnippetError(f"{program}: expected the name {SERVER!r} and a command")
    return _literal(Launch(command[0], tuple(command[1:]), tuple(sorted(env.items()))), program)


def claude_mcp_add(text: str) -> Launch:
    """``claude mcp add``: ``--transport``/``-t``, ``--scope``/``-s``, ``--env``/``-e``."""
    claude = {"--transport": "stdio", "-t": "stdio", "--scope": "", "-s": "", "--env": "env"}
    return _cli_add(text, "claude", {**claude, "-e": "env"})


def codex_mcp_add(text: str) -> Launch:
    """``codex mcp add``: ``--env``."""
    return _cli_add(text, "codex", {"--env": "env"})


#: How each client on the page reads its block, given the environment it expands from.
READERS: dict[str, Callable[[str, Mapping[str, str]], Launch]] = {
    "claude-code-cli": lambda text, _: claude_mcp_add(text),
    "claude-code": claude_code_json,
    "codex-cli": lambda text, _: codex_mcp_add(text),
    "codex": lambda text, _: codex_toml(text),
    "cursor": lambda text, _: json_servers(text, "cursor"),
    "vscode": lambda text, _: json_servers(text, "vscode", key="servers"),
    "claude-desktop": lambda text, _: json_servers(text, "claude-desktop"),
    "windsurf": lambda text, _: json_servers(text, "windsurf"),
    "gemini-cli": lambda text, _: json_servers(text, "gemini-cli"),
}
