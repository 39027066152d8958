"""``--agent-id``, ``--task-id`` (and ``--visibility`` where the CLI writes): ``read`` and
``add`` write into a scope, ``search`` and ``context`` filter by it (memreader.scopes); a bad
scope exits 2 with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memreader.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_read_and_add_write_into_a_scope_that_search_and_context_filter_by(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url, config = where
    owner = ["--store", url, "--user-id", "ana", "--config", config]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "Vault A holds the deploy key."}]))
    code, _, err = run(capsys, "read", str(chat), *owner, "--task-id", "A", "--no-progress")
    assert code == 0, err
    code, _, err = run(capsys, "add", "Vault B holds the deploy key.", *owner, "--task-id", "B")
    assert code == 0, err
    shared = ["--task-id", "B", "--visibility", "shared"]
    assert run(capsys, "add", "Deploys are on Mondays.", *owner, *shared)[0] == 0

    def found(*flags: str) -> set[str]:
        code, out, err = run(capsys, "search", "deploy key vault Mondays", *owner, *flags, "--json")
        assert code == 0, err
        return {hit["memory"] for hit in json.loads(out)["hits"]}

    assert found("--task-id", "A") == {
        "user: Vault A holds the deploy key.",
        "Deploys are on Mondays.",
    }
    assert len(found()) == 3  # the owner-wide view
    assert found("--agent-id", "bot") == found()  # no memory has an agent
    code, out, err = run(capsys, "context", "vault", *owner, "--task-id", "B")
    assert code == 0, err
    assert "Vault B" in out and "Vault A" not in out


def test_a_bad_scope_exits_2_with_one_line(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    owner = ["--store", url, "--user-id", "ana", "--config", config]
    code, out, err = run(capsys, "add", "x", *owner, "--task-id", "t" * 201)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0] == "memreader: error: task_id must be at most 200 characters, got 201"
    with pytest.raises(SystemExit) as stop:
        main(["add", "x", *owner, "--visibility", "public"])
    assert stop.value.code == 2
    assert "invalid choice: 'public'" in capsys.readouterr().err
