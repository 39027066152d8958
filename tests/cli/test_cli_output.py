"""What ``read`` and ``search`` print: a summary a person reads (text, type, sources), the
machine form with ``--json`` / ``-o``, and whose the items are when ``--user-id`` is not given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memreader.cli import main
from memreader.cli.read import DEFAULT_USER
from tests.common import ROOT

CHAT = [
    [
        {"role": "user", "content": "I moved to Lisbon last spring.", "message_id": "m1"},
        {"role": "assistant", "content": "Lisbon is lovely in spring."},
    ]
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT), encoding="utf-8")
    (tmp_path / "hash.yaml").write_text(
        yaml.safe_dump({"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}})
    )
    return path


def test_read_prints_a_summary_without_vectors(
    chat: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(chat.parent / "hash.yaml")
    code, out, err = run(
        capsys,
        "read",
        str(chat),
        "--config",
        config,
        "--user-id",
        "ana",
        "--session-id",
        "s1",
        "--no-progress",
    )
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("1. [") and "Lisbon" in lines[0]
    assert lines[1] == "   session s1: message m1; scene 0, message 1"
    assert "embedding" not in out and len(lines) == 2  # one item: two lines, no floats


def test_json_and_output_give_the_items_whole(
    chat: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(chat.parent / "hash.yaml")
    argv = ["read", str(chat), "--config", config, "--user-id", "ana", "--no-progress"]
    code, out, _ = run(capsys, *argv, "--json")
    [item] = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(item["metadata"]["embedding"]) > 0
    code, out, _ = run(capsys, *argv, "-o", str(tmp_path / "items.jsonl"))
    assert code == 0 and out == ""
    [again] = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert again["memory"] == item["memory"]


def test_a_read_without_user_id_says_whose_the_items_are(
    chat: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "read", str(chat), "--no-embedding", "--no-progress", "--json")
    assert code == 0
    assert err == f"memreader: no --user-id: the items belong to user {DEFAULT_USER!r}\n"
    assert json.loads(out.splitlines()[0])["metadata"]["user_id"] == DEFAULT_USER


def test_search_names_each_hits_sources(
    chat: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    config = str(chat.parent / "hash.yaml")
    argv = ["read", str(chat), "--config", config, "--user-id", "ana", "--session-id", "s1"]
    assert run(capsys, *argv, "--store", url, "--no-progress")[0] == 0
    search = ["search", "Lisbon", "--store", url, "--user-id", "ana", "--config", config, "-k", "1"]
    code, out, _ = run(capsys, *search, "--json")
    [hit] = json.loads(out)["hits"]
    assert code == 0
    assert [(s.get("message_id"), s["message_index"]) for s in hit["sources"]] == [
        ("m1", 0),
        (None, 1),
    ]
    assert hit["sources"][0]["content"] == "I moved to Lisbon last spring."
    code, out, _ = run(capsys, *search)
    assert code == 0
    assert out.splitlines()[2] == "   session s1: message m1; scene 0, message 1"
    # --min-score: the hits at least that relevant only (a bad one is refused, exit 2).
    code, out, _ = run(capsys, *search, "--json", "--min-score", "1")
    assert code == 0 and all(h["score"]["relevance"] >= 1 for h in json.loads(out)["hits"])
    code, _, err = run(capsys, *search, "--min-score", "2")
    assert code == 2 and "min_score must be a number in [0, 1]" in err


def test_sources_are_grouped_by_scene_and_documents_named() -> None:
    from memreader.cli.summary import sources_text
    from memreader.items import SourceMessage, TextualMemoryItemMetadata

    def meta(*sources: SourceMessage) -> TextualMemoryItemMetadata:
        return TextualMemoryItemMetadata(user_id="u", session_id="s", sources=list(sources))

    run = [SourceMessage(scene_index=0, message_index=i) for i in range(4)]
    assert sources_text(meta(*run)) == "session s: scene 0, messages 0-3"
    gaps = [SourceMessage(scene_index=2, message_index=i) for i in (0, 2, 5)]
    assert sources_text(meta(*gaps), scene_offset=1) == "session s: scene 3, messages 0, 2, 5"
    doc = SourceMessage(
        type="file", scene_index=0, message_index=0, doc_path="a.md", chunk_index=1, chunk_count=3
    )
    assert sources_text(meta(doc)) == "session s: a.md (chunk 2 of 3)"
    many = [SourceMessage(scene_index=0, message_index=0, message_id=f"m{i}") for i in range(6)]
    assert sources_text(meta(*many)) == (
        "session s: message m0; message m1; message m2; message m3 (+2 more)"
    )
    assert sources_text(meta()) == "session s: no source"


@pytest.mark.parametrize("where", ["out.txt", "out.txt/sub"])
def test_export_md_to_a_file_prints_its_one_error_line(tmp_path: Path, where: str) -> None:
    # A subprocess: the warning that came before the error went through the command's logging.
    from memreader import Memory

    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory({"config": {"embedder": {"backend": "hash"}}}, store=url) as memory:
        memory.add("I live in Porto.", user_id="alice")
    (tmp_path / "out.txt").write_text("mine", encoding="utf-8")
    argv = [sys.executable, "-m", "memreader.cli", "export-md", "--store", url]
    argv += ["--user-id", "alice", "-o", str(tmp_path / where)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines  # the exit-code table's one line, no warning before it
    assert lines[0].startswith("memreader: error: cannot ")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "mine"
