"""``memreader delete --erase`` and ``memreader forget [--erase]`` print the erase receipt
(issue 41): one line per part after the events, or the ``receipt`` object with ``--json``."""

from __future__ import annotations

import json

import pytest

from memreader.cli import main
from memreader.stores import open_store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _add(capsys: pytest.CaptureFixture[str], where: tuple[str, str], text: str) -> str:
    url, config = where
    code, out, _ = run(capsys, "add", text, "--store", url, "--user-id", "ana", "--config", config)
    assert code == 0
    return out.split()[1]


def test_delete_erase_prints_the_receipt(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    memory_id = _add(capsys, where, "Ana's PIN hint is Marzipan")
    code, out, _ = run(
        capsys, "delete", memory_id, "--store", where[0], "--user-id", "ana", "--erase"
    )
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["EXPIRE", memory_id, "erased:"]
    assert f"erased:     {memory_id}" in lines
    # `add` goes through a Memory, which keeps categories: the erasure reaches them too.
    removed = "removed:    memories 1, text_index 1, passages 1, keys 1, history 1, category_links"
    assert any(line.startswith(removed) for line in lines)
    assert any(line.startswith("rewritten:  category_summaries") for line in lines)
    assert "file:       sqlite: WAL checkpointed and truncated" in lines


def test_delete_erase_json_holds_the_receipt(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    memory_id = _add(capsys, where, "Ana's PIN hint is Marzipan")
    argv = ["delete", memory_id, "--store", where[0], "--user-id", "ana", "--erase", "--json"]
    code, out, _ = run(capsys, *argv)
    shown = json.loads(out)
    assert (code, shown["event"], shown["receipt"]["erased"]) == (0, "EXPIRE", [memory_id])
    assert shown["receipt"]["removed"]["memories"] == 1 and shown["receipt"]["residue"]


def test_forget_erase_erases_and_a_plain_forget_only_expires(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    kept = _add(capsys, where, "Ana likes tea")
    owner = ["--store", where[0], "--user-id", "ana", "--source", "session:direct", "--json"]
    code, out, _ = run(capsys, "forget", *owner)
    plain = json.loads(out)
    assert (code, plain["receipt"]["expired"], plain["receipt"]["erased"]) == (0, [kept], [])
    code, out, _ = run(capsys, "forget", *owner, "--erase")
    erased = json.loads(out)
    assert (code, erased["receipt"]["erased"]) == (0, [kept])  # an expired memory is reached
    assert [e["event"] for e in erased["events"]] == ["EXPIRE"]
    with open_store(where[0], text_only=True) as store:
        assert store.get(kept, user_id="ana") is None
