"""How every ``memreader`` subcommand spells and documents its flags.

One spelling per concept across the subcommands (:data:`CANONICAL`: ``--user-id``,
``--session-id``, ``--output``); an older spelling keeps working as a hidden
alias (:func:`add_alias`), so scripts written against it do not break. Every flag's help shows
its default (:class:`HelpFormatter`).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(formatter_class=HelpFormatter)
    >>> _ = parser.add_argument("--session-id", default="s", help="the session")
    >>> add_alias(parser, "--session", dest="session_id")
    >>> parser.parse_args(["--session", "s1"]).session_id
    's1'
    >>> "--session " in parser.format_help()
    False
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["CANONICAL", "HelpFormatter", "add_alias", "add_scope_flags", "scope_args"]

#: Each concept's one spelling, and the older spellings that are hidden aliases of it.
CANONICAL: dict[str, tuple[str, ...]] = {
    "--user-id": ("--user",),
    "--user-ids": ("--users",),
    "--session-id": ("--session",),
    "--output": ("--out",),
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The descriptions as written, and each flag's default after its help (unless the help
    already says it, or there is nothing to say: no value, off, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        quiet = default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0
        if quiet or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


def add_alias(parser: Any, *flags: str, dest: str, **kwargs: Any) -> None:
    """Accept ``flags`` as older spellings of the flag stored in ``dest`` (same ``kwargs``:
    ``action``, ``type``), not shown in ``--help``. The alias has no default of its own, so the
    documented flag's default stands."""
    parser.add_argument(
        *flags, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs
    )


def add_scope_flags(parser: Any, *, visibility: bool = False) -> None:
    """``--agent-id`` and ``--task-id`` (and, for a command that writes, ``--visibility``):
    the scope a command reads or writes (:mod:`memreader.scopes`)."""
    parser.add_argument(
        "--agent-id", help="the agent: its memories, those of no agent and the shared ones"
    )
    parser.add_argument(
        "--task-id",
        help="the task: its memories, those of no task and the shared ones (never another "
        "task's private ones)",
    )
    if visibility:
        parser.add_argument(
            "--visibility",
            choices=("private", "shared"),
            help="private (the default): its task and agent only; shared: every task",
        )


def scope_args(args: argparse.Namespace) -> dict[str, Any]:
    """The scope flags given (:func:`add_scope_flags`), as keyword arguments."""
    names = ("agent_id", "task_id", "visibility")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
