"""``read --mode fine`` checks its LLM before any window: a server that cannot be reached, or
refuses, or a missing API key, exits 2 at once naming the slot and the (masked) URL;
``--no-check`` skips the check. ``ingest`` of a fine job and ``refine`` check the job's reader the
same way."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from memreader.cli import main
from memreader.secret_masking import mask_url
from tests.fine_script import kind, scripted_responder
from tests.llm_server import LLMTestServer, Reply

CHAT = '[[{"role": "user", "content": "I like tea."}]]'


@pytest.fixture(autouse=True)
def no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "MEMREADER_LLM_BASE_URL", "MEMREADER_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def read_fine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *flags: str
) -> tuple[int, list[str], Path]:
    chat = tmp_path / "chat.json"
    chat.write_text(CHAT, encoding="utf-8")
    out = tmp_path / "items.jsonl"
    argv = ["read", str(chat), "--mode", "fine", "--no-embedding", "--no-progress"]
    code = main([*argv, "--user-id", "u", "-o", str(out), *flags])
    return code, capsys.readouterr().err.splitlines(), out


def test_an_unreachable_server_exits_2_before_any_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://ana:pw-secret@127.0.0.1:{free_port()}/v1"
    code, err, out = read_fine(capsys, tmp_path, "--llm-model", "m", "--llm-base-url", url)
    assert code == 2
    [line] = err
    assert line.startswith(
        f"memreader: error: fine mode: the LLM of slot 'llm' (m at {mask_url(url)}) does not "
        "work: LLMConnectionError"
    )
    assert "pw-secret" not in line and line.endswith("--no-check skips this check)")
    assert not out.exists(), "nothing was read"


def test_a_refusing_server_is_asked_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(status=401, body={"error": {"message": "key"}})
        code, err, out = read_fine(
            capsys, tmp_path, "--llm-model", "m", "--llm-base-url", server.url
        )
        requests, url = len(server.requests), server.url
    assert code == 2 and requests == 1  # the check only: no window, no retry
    [line] = err
    assert f"slot 'llm' (m at {url}) does not work: LLMRequestError" in line
    assert not out.exists()


def test_no_check_reads_and_the_windows_fall_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(status=401, body={"error": {"message": "key"}})
        code, err, out = read_fine(
            capsys, tmp_path, "--llm-model", "m", "--llm-base-url", server.url, "--no-check"
        )
    assert code == 1
    assert "memreader: 1 of 1 windows fell back to raw items (see --report)" in err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1


def test_a_missing_api_key_is_caught_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, out = read_fine(capsys, tmp_path, "--llm-model", "gpt-4o-mini")
    assert code == 2
    assert err == [
        "memreader: error: fine mode: the LLM of slot 'llm' (gpt-4o-mini at "
        "https://api.openai.com/v1) needs an API key: set OPENAI_API_KEY or --llm-api-key-env "
        "VAR (or api_key in the config)"
    ]
    assert not out.exists()


# -- ingest and refine: the same check of the job's reader ---------------------------------------


def job_file(tmp_path: Path, url: str, *, mode: str = "fine", refine: bool = False) -> str:
    """A job reading one chat (refine: one JSONL of items) with an LLM at ``url``."""
    data = tmp_path / ("items.jsonl" if refine else "chat.json")
    data.write_text("" if refine else CHAT, encoding="utf-8")
    llm = {"backend": "openai", "model": "m", "base_url": url}
    job = {
        "reader": {"backend": "simple_struct", "config": {"embedder": None, "llm": llm}},
        "mode": mode,
        "inputs": [{"path": str(data), "format": "jsonl" if refine else "json"}],
        "output": {"path": str(tmp_path / "out"), "format": "jsonl"},
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["ingest", "refine"])
def test_a_fine_job_checks_its_llm_before_any_input(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(status=401, body={"error": {"message": "key"}})
        job = job_file(tmp_path, server.url, refine=command == "refine")
        code = main([command, job, "--quiet"])
        requests, url = len(server.requests), server.url
    [line] = capsys.readouterr().err.splitlines()
    assert (code, requests) == (2, 1)  # the check only: no input read
    assert line.startswith(
        f"memreader: error: fine mode: the LLM of slot 'llm' (m at {url}) does not work: "
        "LLMRequestError"
    )
    assert not (tmp_path / "out").exists()


def test_no_check_runs_the_job_and_its_windows_fall_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as server:
        server.responder = lambda request: Reply(status=401, body={"error": {"message": "key"}})
        code = main(["ingest", job_file(tmp_path, server.url), "--quiet", "--no-check"])
    capsys.readouterr()
    assert code == 1  # read, and the window fell back to raw items
    assert (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [["--dry-run"], []])
def test_a_fast_job_or_a_dry_run_asks_no_llm(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}/v1"
    mode = "fine" if argv else "fast"
    code = main(["ingest", job_file(tmp_path, unreachable, mode=mode), "--quiet", *argv])
    capsys.readouterr()
    assert code == 0


def test_a_profile_a_pass_picks_is_checked_and_llm_profile_picks_the_extractor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as good, LLMTestServer() as refusing:
        refusing.responder = lambda request: Reply(status=401, body={"error": {"message": "k"}})
        config = tmp_path / "reader.yaml"
        profiles = {
            "main": {"backend": "openai", "model": "m", "base_url": good.url},
            "fast": {"backend": "openai", "model": "f", "base_url": refusing.url},
        }
        config.write_text(
            yaml.safe_dump(
                {
                    "backend": "simple_struct",
                    "config": {
                        "llm_profiles": profiles,
                        "fine": {"passes": ["extract", {"name": "filter", "llm_profile": "fast"}]},
                    },
                }
            ),
            encoding="utf-8",
        )
        code, err, out = read_fine(
            capsys, tmp_path, "--config", str(config), "--llm-profile", "main"
        )
        url = refusing.url
        good_requests = len(good.requests)
    assert code == 2
    assert f"the LLM of profile 'fast' (f at {url}) does not work: LLMRequestError" in err[0]
    assert good_requests == 1  # the extractor --llm-profile picked answered its check
    assert not out.exists()


def test_llm_profile_with_another_llm_flag_or_an_unknown_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, _ = read_fine(capsys, tmp_path, "--llm-profile", "fast", "--llm-model", "m")
    assert code == 2
    assert err[-1].endswith("--llm-profile picks a whole LLM: leave out --llm-model")
    code, err, _ = read_fine(capsys, tmp_path, "--llm-profile", "fast")
    assert code == 2
    assert "llm names the LLM profile 'fast', which llm_profiles does not define" in err[-1]


def test_a_config_with_a_default_profile_reads_without_llm_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer() as server:
        server.responder = scripted_responder()
        config = tmp_path / "reader.yaml"
        default = {"backend": "openai", "model": "m", "base_url": server.url}
        config.write_text(
            yaml.safe_dump(
                {"backend": "simple_struct", "config": {"llm_profiles": {"default": default}}}
            ),
            encoding="utf-8",
        )
        code, err, out = read_fine(capsys, tmp_path, "--config", str(config))
        kinds = [kind(r) for r in server.requests]
    assert code == 0, err
    assert "memory_extraction" in kinds
    assert out.read_text(encoding="utf-8").strip()
