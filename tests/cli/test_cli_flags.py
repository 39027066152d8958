"""Every subcommand's flags: one spelling per concept, help for each, its default shown, no
RST markup, required flags said to be required; the old spellings still parse."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memreader import __version__
from memreader.cli import build_parser, main
from memreader.cli.flags import CANONICAL


def _parsers(
    parser: argparse.ArgumentParser, name: str = "memreader"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


PARSERS = dict(_parsers(build_parser()))


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


def test_every_subcommand_is_walked() -> None:
    assert {
        "memreader read",
        "memreader search",
        "memreader export-md",
        "memreader models build",
        "memreader ingest",
        "memreader key",
        "memreader serve",
    } <= set(PARSERS)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_option_has_help_and_no_rst_markup(name: str) -> None:
    parser = PARSERS[name]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    text = parser.format_help()
    assert "``" not in text
    assert not re.search(r":(class|mod|func|meth|data|attr|exc):", text), text


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_defaults_are_shown(name: str) -> None:
    parser = PARSERS[name]
    for action in _options(parser):
        if action.default not in (None, False, [], argparse.SUPPRESS) and action.nargs != 0:
            help_text = parser._get_formatter()._expand_help(action)
            assert "default" in help_text, f"{name} {action.option_strings}: {help_text}"


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_one_spelling_per_concept(name: str) -> None:
    shown = {flag for action in _options(PARSERS[name]) for flag in action.option_strings}
    for canonical, old in CANONICAL.items():
        assert not shown & set(old), f"{name} shows {shown & set(old)}; the spelling is {canonical}"


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("memreader search", "--user-id"),
        ("memreader history", "--user-id"),
        ("memreader forget", "--user-id"),
        ("memreader forget", "--source"),
        ("memreader add", "--user-id"),
        ("memreader update", "--user-id"),
        ("memreader delete", "--user-id"),
        ("memreader export-md", "--user-id"),
        ("memreader export-md", "--output"),
        ("memreader key", "--name"),
        ("memreader key", "--user-ids"),
    ],
)
def test_required_flags_are_marked_required(name: str, flag: str) -> None:
    [action] = [a for a in _options(PARSERS[name]) if flag in a.option_strings]
    assert action.required or "required" in (action.help or "")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"memreader {__version__}"


def test_old_spellings_still_parse() -> None:
    parser = build_parser()
    search = parser.parse_args(["search", "q", "--session", "s1", "--type", "fact"])
    assert (search.session_id, search.types) == ("s1", ["fact"])
    new = parser.parse_args(["search", "q", "--session-id", "s1", "--memory-type", "fact"])
    assert (new.session_id, new.types) == ("s1", ["fact"])
    old = parser.parse_args(["export-md", "--user", "a", "--user-id", "b", "--out", "d", "--force"])
    assert (old.users, old.out, old.allow_foreign_files) == (["a", "b"], "d", True)
    new = parser.parse_args(["export-md", "--user-id", "a", "-o", "d"])
    assert (new.users, new.out, new.allow_foreign_files) == (["a"], "d", False)


def test_export_md_without_an_output_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert main(["export-md", "--store", url, "--user-id", "ana"]) == 2
    assert capsys.readouterr().err == (
        "memreader: error: export-md needs --output FOLDER (where the owners' folders go)\n"
    )


def test_key_takes_user_ids_and_the_old_users(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["key", "--name", "app", "--user-ids", "ana,bob"]) == 0
    assert 'users: ["ana", "bob"]' in capsys.readouterr().out
    assert main(["key", "--name", "app", "--users", "ana"]) == 0
    assert 'users: ["ana"]' in capsys.readouterr().out
    assert main(["key", "--name", "app"]) == 2
    assert capsys.readouterr().err == (
        "memreader: error: key needs --user-ids ID[,ID...] (or '*' for every user)\n"
    )
