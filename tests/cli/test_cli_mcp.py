"""``memreader mcp``'s command line: a call that cannot be served exits 2 with one line saying
why, before anything listens or opens a store (issue 32; the server itself: tests/mcp/)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memreader import cli
from memreader.service.keys import hash_key


def _config(tmp_path: Path, keys: bool) -> str:
    data: dict[str, object] = {
        "backend": "simple_struct",
        "config": {"embedder": {"backend": "hash"}, "store": f"sqlite:///{tmp_path / 'm.db'}"},
    }
    if keys:
        key = {"name": "app", "sha256": hash_key("mr_test_app"), "users": ["alice"]}
        data["service"] = {"keys": [key]}
    path = tmp_path / "mcp.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("args", "keys", "said"),
    [
        ([], False, "memreader mcp needs --user-id ID over stdio"),
        (["--user-id", ""], False, "--user-id must be a non-empty user id"),
        (
            ["--http", "--host", "0.0.0.0"],
            False,
            "refusing to listen on '0.0.0.0' without API keys",
        ),
        (["--http", "--user-id", "alice"], True, "--user-id is for a server without keys"),
        (["--user-id", "a", "--timeout", "0"], False, "--timeout must be a number of seconds > 0"),
        (["--user-id", "a", "--store", "bogus://x"], False, "unknown memory store 'bogus'"),
    ],
)
def test_a_call_that_cannot_be_served_exits_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    keys: bool,
    said: str,
) -> None:
    code = cli.main(["mcp", "--config", _config(tmp_path, keys), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert said in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.db").exists()  # no store was opened
