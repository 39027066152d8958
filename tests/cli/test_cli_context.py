"""``memreader context``: the block printed as it goes into a prompt (within its budget), or the
service's JSON with ``--json``; nothing found is exit 0 with a line on stderr; bad input exits
2 with one line naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memreader.cli import main
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from memreader.windowing.tokens import get_tokenizer


@pytest.fixture
def where(tmp_path: Path) -> tuple[str, str]:
    """A store holding two of ana's memories and one of bob's, and a hash-embedder config."""
    config = tmp_path / "hash.yaml"
    config.write_text(
        yaml.safe_dump({"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}})
    )
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with open_store(url, embedder=HashEmbedder()) as store:
        store.add_memory("Ana adopted a cat named Miso.", user_id="ana")
        store.add_memory("Ana plays chess on Tuesdays.", user_id="ana")
        store.add_memory("Bob's cat is called Tiger.", user_id="bob")
    return url, str(config)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_the_block_is_printed_within_its_budget(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    argv = ["context", "cat name", "--store", url, "--user-id", "ana", "--config", config]
    code, out, err = run(capsys, *argv, "--max-tokens", "120")
    assert (code, err) == (0, [])
    block = out.removesuffix("\n")
    assert block.startswith("<memories ") and block.endswith("</memories>")
    assert "Miso" in block and "Tiger" not in block
    assert get_tokenizer().count(block) <= 120
    code, out, err = run(capsys, *argv, "--json", "--order", "score", "-k", "5")
    data = json.loads(out)
    assert code == 0 and data["max_tokens"] == 1000 and data["tokenizer"] == "cl100k_base"
    assert data["tokens"] == get_tokenizer().count(data["text"])
    assert {part["text"] for part in data["parts"]} >= {"Ana adopted a cat named Miso."}


def test_nothing_found_is_exit_0_with_a_line(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = where
    argv = ["context", "cat", "--store", url, "--user-id", "carol", "--no-embedding"]
    assert run(capsys, *argv) == (0, "", ["memreader: no memory found"])


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--max-tokens", "20"], "max_tokens"),
        (["--tokenizer", "o200k_nope"], "tokenizer"),
        (["--user-id", " "], "--user-id"),
        (["--since", "yesterday"], "--since"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], named: str
) -> None:
    url, _ = where
    argv = ["context", "cat", "--store", url, "--user-id", "ana", "--no-embedding", *extra]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1 and named in err[0]


def test_an_empty_query_exits_2(where: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = where
    code, _, err = run(capsys, "context", "", "--store", url, "--user-id", "ana")
    assert code == 2 and "query" in err[0]
