"""``memreader maintain``, ``pin``, ``unpin`` and ``restore``: a dry run that writes nothing,
a run that purges, expires and repairs (text and ``--json``), pins from the command line, and
exit 2 with one line for a bad setting."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader.cli import main
from memreader.stores import open_store
from memreader.testing import HashEmbedder

OLD = datetime.now(timezone.utc) - timedelta(days=40)


@pytest.fixture
def where(tmp_path: Path) -> tuple[str, str]:
    """A store with 12 memories of ``ana`` without vectors, one deleted 40 days ago, and a
    reader config with the hash embedder and a budget of 10."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with open_store(url, text_only=True) as store:
        for i in range(12):
            store.add_memory(f"fact {i}: the ferry {i} leaves at {i}", user_id="ana", now=OLD)
    config = tmp_path / "life.yaml"
    raw = {"embedder": {"backend": "hash"}, "lifecycle": {"max_active": 10}}
    config.write_text(yaml.safe_dump({"backend": "simple_struct", "config": raw}))
    return url, str(config)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def _ids(url: str) -> list[str]:
    with open_store(url, text_only=True) as store:
        hits = store.search("ferry", user_id="ana", k=50, mode="text", include_inactive=True)
        return sorted(h.id for h in hits)


def test_maintain_dry_run_then_run(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    victim = _ids(url)[0]
    with open_store(url, text_only=True) as store:
        store.delete(victim, user_id="ana", now=OLD)
    code, out, err = run(
        capsys, "maintain", "--store", url, "--config", config, "--dry-run", "--json"
    )
    assert (code, err) == (0, [])
    report: dict[str, Any] = json.loads(out)
    assert report["dry_run"] is True
    assert report["totals"] == {"purged": 1, "expired": 5, "repaired": 11}
    assert report["expired"] == {"ana": 5}
    assert len(_ids(url)) == 12  # nothing written
    code, out, err = run(capsys, "maintain", "--store", url, "--config", config)
    assert (code, err) == (0, [])
    assert out.splitlines()[:3] == [
        "purged: 1 memories purged",
        "expired: 5 memories expired",
        "repaired: 6 memories repaired",
    ]
    assert "  expired ana: 5" in out.splitlines()
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config, "--json")
    assert json.loads(out)["totals"] == {"purged": 0, "expired": 0, "repaired": 0}


def test_maintain_exits_1_naming_the_rows_it_could_not_repair(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    assert run(capsys, "maintain", "--store", url, "--config", config)[0] == 0
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        broken = conn.execute("SELECT id FROM memories WHERE status = 'active'").fetchone()[0]
        conn.execute("UPDATE memories SET item = '{', embedding = NULL WHERE id = ?", (broken,))
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config)
    assert code == 1
    assert (
        f"unreadable ana: 1 memories whose rows cannot be read (fix or delete them): {broken}"
        in out
    )
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config, "--json")
    report = json.loads(out)
    assert code == 1 and report["complete"] is False and report["unreadable"] == {"ana": [broken]}


def test_pin_unpin_and_restore(where: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, config = where
    ids = _ids(url)
    code, out, _ = run(capsys, "pin", *ids[:2], "--store", url, "--user-id", "ana")
    assert (code, out) == (0, "pinned 2 of 2 memories\n")
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config, "--no-embedding")
    assert code == 0 and "note: repair: off (the store is open text only: no embedder)" in out
    with open_store(url, embedder=HashEmbedder()) as store:
        assert {store.get(i, user_id="ana").status for i in ids[:2]} == {"active"}  # type: ignore[union-attr]
        gone = [i for i in ids if store.get(i, user_id="ana").status == "expired"]  # type: ignore[union-attr]
    code, out, _ = run(capsys, "restore", gone[0], "--store", url, "--user-id", "ana", "--json")
    assert code == 0 and json.loads(out)["event"] == "ADD"
    code, out, _ = run(capsys, "unpin", ids[0], "--store", url, "--user-id", "ana", "--json")
    assert json.loads(out) == {"changed": 1, "pinned": [ids[1]]}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-active", "0"],
            "memreader: error: invalid LifecycleConfig: max_active: Input should be greater "
            "than or equal to 1",
        ),
        (
            ["--purge-after-days", "-2"],
            "memreader: error: invalid LifecycleConfig: purge_after_days: Input should be "
            "greater than or equal to 0",
        ),
    ],
)
def test_a_bad_setting_exits_2_with_one_line(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    url, config = where
    code, out, err = run(capsys, "maintain", "--store", url, "--config", config, *argv)
    assert (code, out, err) == (2, "", [message])


def test_pin_needs_an_owner(where: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "pin", "x", "--store", where[0])
    assert (code, err) == (2, ["memreader: error: pin needs --user-id (every memory has an owner)"])


def test_maintain_check_counts_the_index_and_writes_nothing(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = where
    code, out, err = run(capsys, "maintain", "--store", url, "--config", config, "--check")
    assert (code, err) == (1, [])  # memories are missing from the index: not a success
    assert "12 of 12 active memories are not in the vector index (12 without a vector)" in out
    assert f"`memreader maintain --store {url} --config READER.yaml`" in out
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config, "--check", "--json")
    health = json.loads(out)
    assert (code, health["missing"], health["foreign"], health["embedder"]) == (
        1,
        12,
        {},
        "hash:16",
    )
    assert run(capsys, "maintain", "--store", url, "--config", config)[0] == 0
    code, out, _ = run(capsys, "maintain", "--store", url, "--config", config, "--check")
    assert code == 0 and "active memories are in the vector index" in out
