"""The command-line reference, written from ``memreader``'s argparse parser.

Each command's ``--help``, as the parser prints it at a fixed width, so the page is what a user
sees in a terminal and cannot drift from the flags: it is rebuilt on every ``mkdocs build``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cli_reference"]

#: The width argparse wraps help at (it reads COLUMNS), so builds agree on every terminal.
WIDTH = "100"

_INTRO = """# Command-line reference

Generated from the code on every build of this site: each section is what
`memreader COMMAND --help` prints. Walk-throughs are in [Command line](../tutorials/cli.md).
"""


@contextmanager
def _columns(width: str) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for name, sub in _subcommands(parser).items():
        yield from _walk(sub, f"{path} {name}")


def cli_reference() -> str:
    """The command-line reference page (Markdown)."""
    from memreader.cli import build_parser

    out = [_INTRO]
    with _columns(WIDTH):
        for path, parser in _walk(build_parser(), "memreader"):
            level = "#" * min(2 + path.count(" "), 4)
            out += [f"{level} `{path}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)
