"""``memreader list`` (issue 42): a user's memories without a query, newest first, a page at a
time, with the search's filter flags; and ``memreader search``'s flags as one SearchFilters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memreader.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def _fill(capsys: pytest.CaptureFixture[str], url: str, config: str) -> None:
    for text, session in (("Ana lives in Porto", "s1"), ("Ana plays chess", "s2")):
        argv = ["add", text, "--store", url, "--user-id", "ana", "--config", config]
        assert run(capsys, *argv, "--session-id", session)[0] == 0


def test_list_pages_newest_first_with_filters(
    capsys: pytest.CaptureFixture[str], where: tuple[str, str]
) -> None:
    url, config = where
    _fill(capsys, url, config)
    base = ["list", "--store", url, "--user-id", "ana", "--json"]
    code, out, _ = run(capsys, *base, "--limit", "1")
    first: dict[str, Any] = json.loads(out)
    assert code == 0 and [m["memory"] for m in first["memories"]] == ["Ana plays chess"]
    code, out, _ = run(capsys, *base, "--cursor", first["next_cursor"])
    rest = json.loads(out)
    assert [m["memory"] for m in rest["memories"]] == ["Ana lives in Porto"]
    assert rest["next_cursor"] is None
    code, out, _ = run(capsys, *base, "--session-id", "s1")
    assert [m["memory"] for m in json.loads(out)["memories"]] == ["Ana lives in Porto"]
    code, out, err = run(capsys, "list", "--store", url, "--user-id", "ana", "--limit", "1")
    assert code == 0 and "Ana plays chess" in out and err[-1].startswith("memreader: more:")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cursor", "garbage"], "cursor 'garbage' is not one a listing gave"),
        (["--limit", "0"], "limit must be an integer in [1, 1000], got 0"),
        (["--since", "yesterday"], "--since"),
        (["--memory-type", "Nope"], "types[0] must be a memory type"),
    ],
)
def test_list_refuses_bad_flags_with_one_line(
    capsys: pytest.CaptureFixture[str], where: tuple[str, str], argv: list[str], message: str
) -> None:
    url, config = where
    _fill(capsys, url, config)
    code, _, err = run(capsys, "list", "--store", url, "--user-id", "ana", *argv)
    assert code == 2 and len(err) == 1 and message in err[0]


def test_search_flags_reach_the_store_as_one_value(
    capsys: pytest.CaptureFixture[str], where: tuple[str, str]
) -> None:
    url, config = where
    _fill(capsys, url, config)
    argv = ["search", "Ana", "--store", url, "--user-id", "ana", "--config", config, "--json"]
    code, out, _ = run(capsys, *argv, "--session-id", "s2", "--heat-weight", "0.5")
    assert code == 0 and [h["memory"] for h in json.loads(out)["hits"]] == ["Ana plays chess"]
    code, _, err = run(capsys, *argv, "--min-score", "2")
    assert code == 2 and "min_score must be a number in [0, 1]" in err[0]
