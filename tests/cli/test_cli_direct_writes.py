"""``memreader add``, ``update`` and ``delete``: each prints its write event (one line, or the
service's JSON shape with ``--json``), writes with the embedder ``search`` uses, and exits 2
with one line for an unknown id or bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memreader.cli import main
from memreader.stores import open_store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def add(capsys: pytest.CaptureFixture[str], where: tuple[str, str], *argv: str) -> dict[str, Any]:
    url, config = where
    code, out, err = run(
        capsys, "add", *argv, "--store", url, "--user-id", "ana", "--config", config, "--json"
    )
    assert (code, err) == (0, [])
    event: dict[str, Any] = json.loads(out)
    return event


def test_add_stores_the_memory_with_its_fields_and_a_vector(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    event = add(
        capsys,
        where,
        "Ana is vegetarian",
        "--session-id",
        "s1",
        "--memory-type",
        "UserMemory",
        "--importance",
        "0.9",
        "--valid-from",
        "2026-01-31T12:00",
        "--metadata",
        '{"origin": "cli"}',
    )
    assert set(event) == {"event", "memory_id", "item_id", "reason", "previous_id"}
    assert event["event"] == "ADD"
    with open_store(where[0], text_only=True) as store:
        memory = store.get(event["memory_id"], user_id="ana")
    assert memory is not None
    meta = memory.item.metadata
    assert (memory.item.memory, meta.session_id, meta.memory_type.value) == (
        "Ana is vegetarian",
        "s1",
        "UserMemory",
    )
    assert (memory.importance, meta.info) == (0.9, {"origin": "cli"})
    assert memory.valid_from is not None and memory.valid_from.isoformat().startswith(
        "2026-01-31T12:00:00+00:00"
    )
    assert meta.embedding  # embedded with --config's embedder, as search embeds queries


def test_add_twice_prints_none_in_one_line(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    first = add(capsys, where, "Ana is vegetarian")
    url, config = where
    argv = ["add", "Ana is vegetarian", "--store", url, "--user-id", "ana", "--config", config]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, [])
    assert out == f"NONE      {first['memory_id']}  already stored\n"


def test_update_then_delete_then_erase(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    old = add(capsys, where, "Bo likes tea")["memory_id"]
    owner = ["--store", url, "--user-id", "ana"]
    code, out, _ = run(
        capsys, "update", old, "Bo likes green tea", *owner, "--config", config, "--reason", "r"
    )
    event, new, _reason = out.split(maxsplit=2)
    assert (code, event) == (0, "UPDATE")
    code, out, _ = run(capsys, "delete", new, *owner, "--json")
    assert (code, json.loads(out)["event"], json.loads(out)["memory_id"]) == (0, "EXPIRE", new)
    with open_store(url, text_only=True) as store:
        statuses = [getattr(store.get(i, user_id="ana"), "status", None) for i in (old, new)]
    assert statuses == ["superseded", "expired"]
    code, out, _ = run(capsys, "delete", new, *owner, "--erase")
    assert (code, out.split()[:3]) == (0, ["EXPIRE", new, "erased:"])
    with open_store(url, text_only=True) as store:
        assert store.get(new, user_id="ana") is None  # its row is gone: irreversible
    code, out, err = run(capsys, "delete", new, *owner)
    assert (code, err) == (2, [f"memreader: error: user 'ana' has no memory {new!r}"])


@pytest.mark.parametrize("command", ["update", "delete"])
def test_an_unknown_id_exits_2_naming_it(
    command: str, where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    add(capsys, where, "Ana is vegetarian")  # the store exists
    text = ["new text", "--no-embedding"] if command == "update" else []
    code, out, err = run(capsys, command, "nope", *text, "--store", where[0], "--user-id", "ana")
    assert (code, out) == (2, "")
    assert err == ["memreader: error: user 'ana' has no memory 'nope'"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--metadata", "[1]"], "--metadata must be a JSON object, got '[1]'"),
        (["--metadata", "{"], "--metadata is not JSON: "),
        (["--importance", "3"], "--importance must be in [0, 1], got 3.0"),
        (["--valid-from", "bad"], "--valid-from 'bad' is not an ISO 8601 time"),
    ],
)
def test_bad_add_input_exits_2_with_one_line(
    argv: list[str], message: str, where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "add", "x", *argv, "--store", where[0], "--user-id", "ana")
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(f"memreader: error: {message}")
    assert not Path(where[0].removeprefix("sqlite:///")).exists()  # checked before opening


def test_empty_text_and_missing_owner_or_home_store_exit_2(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMREADER_STORE", raising=False)
    home = Path(where[0].removeprefix("sqlite:///")).parent / "home"
    monkeypatch.setenv("MEMREADER_HOME", str(home))
    url = where[0]
    cases = [
        (["add", "", "--store", url, "--user-id", "ana", "--no-embedding"], "add: a memory's text"),
        (["update", "i", " ", "--store", url, "--user-id", "ana"], "update: a memory's text"),
        (["add", "x", "--store", url], "add needs --user-id"),
        # No --store: the home store, which nothing has made yet.
        (["delete", "i", "--user-id", "ana"], f"no memory store at sqlite:///{home}"),
        (["update", "i", "t", "--store", url, "--user-id", "ana"], "no memory store at"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert err[0].startswith(f"memreader: error: {message}"), err
    assert not Path(url.removeprefix("sqlite:///")).exists()  # none of them made a store


def test_a_bad_memory_type_is_refused_by_the_parser(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["add", "x", "--store", where[0], "--user-id", "ana", "--memory-type", "Nope"])
    assert stop.value.code == 2
    assert "invalid choice: 'Nope'" in capsys.readouterr().err
