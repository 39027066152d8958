"""``memreader eval FILE``: a Markdown table per conversation and pooled on stdout, everything
as JSON with ``--json``, no progress bar when stderr is not a terminal, and a bad file, flag or
output exit 2 with one line naming it (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memreader.cli import main
from memreader.evaluation import EvalResult
from tests.evaluation.eval_files import locomo_samples, simple_file, write


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(["eval", *argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_a_locomo_file_prints_a_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "locomo.json", locomo_samples())
    out_json = tmp_path / "out" / "result.json"
    code, out, err = run(capsys, str(path), "--json", str(out_json), "--budgets", "150,600")
    assert (code, err) == (0, [])  # the default config: the bundled local embedder
    lines = out.splitlines()
    assert lines[0].startswith("| conversation | sessions | messages | memories | questions |")
    assert (
        "| recall@1 | recall@3 | recall@10 | msg@1 | msg@3 | msg@10 | ctx@150 | ctx@600 |"
        in (lines[0])
    )
    rows = [line.split(" | ")[0] for line in lines if line.startswith("| ") and "---" not in line]
    assert rows[1:4] == ["| conv-a", "| conv-b", "| **all**"]
    assert "locomo.json: conversations 2, messages 13, questions 7" in out
    result = EvalResult.from_dict(json.loads(out_json.read_text(encoding="utf-8")))
    assert result.budgets == (150, 600) and len(result.questions) == 7
    assert result.questions[0].memory_rank == 1 and result.questions[0].held == {
        150: True,
        600: True,
    }


def test_flags_choose_conversations_categories_names_and_the_mode(
    tmp_path: Path, where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = where  # the hash embedder: these flags are not about the model
    path = write(tmp_path, "simple.json", simple_file())
    kept = tmp_path / "kept"
    argv = [str(path), "--config", config, "--conversations", "conv-b", "--no-progress"]
    argv += ["--categories", "single-hop", "--mode", "text", "--no-names", "--recall-at", "1,2"]
    code, out, err = run(capsys, *argv, "--keep-store", str(kept), "--miss-analysis")
    assert (code, err) == (0, [])
    assert "| conv-b |" in out and "| conv-a |" not in out
    assert "| single-hop | 1 |" in out and "recall@2" in out and "search mode text" in out
    assert f"config {config}" in out
    assert (kept / "eval.db").is_file()
    code, out, err = run(capsys, *argv, "--keep-store", str(kept))  # never over a kept store
    assert code == 2 and len(err) == 1 and "eval.db exists" in err[0]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--budgets", "500,x"], "--budgets takes whole numbers > 0 separated by commas"),
        (["--recall-at", "0"], "--recall-at takes whole numbers > 0"),
        (["--conversations", "conv-z"], "locomo.json: no conversation conv-z; known: conv-a"),
        (
            ["--categories", "9"],
            "no question to ask (0 without known evidence, 9 of other categories)",
        ),
        (["--config", "missing.yaml"], "cannot read config 'missing.yaml'"),
    ],
)
def test_a_bad_flag_is_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    path = write(tmp_path, "locomo.json", locomo_samples())
    code, out, err = run(capsys, str(path), *argv)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith("memreader: error: ") and expected in err[0], err


def test_a_bad_file_or_output_is_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = locomo_samples()
    del broken[1]["conversation"]["session_2"][0]["text"]
    path = write(tmp_path, "locomo.json", broken)
    code, out, err = run(capsys, str(path))
    assert (code, out) == (2, "")
    assert err == [
        'memreader: error: locomo.json: conversation 2 (conv-b): session_2 turn 1: no "text"'
    ]
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{", encoding="utf-8")
    code, _, err = run(capsys, str(bad_json))
    assert code == 2 and len(err) == 1 and "bad.json: not JSON" in err[0]
    code, _, err = run(capsys, str(tmp_path / "none.json"))
    assert code == 2 and len(err) == 1 and "none.json: cannot read it" in err[0]
    good = write(tmp_path, "good.json", locomo_samples())
    code, out, err = run(capsys, str(good), "--json", str(tmp_path))  # a folder: before any work
    assert (code, out, len(err)) == (2, "", 1) and "it is a directory" in err[0]
