"""``memreader search --rerank``, ``context --rerank`` and ``recall``: the LLM of ``--config``
(a real HTTP server scripted as the model) reorders, and its failures leave the store's order
with a line on stderr; without an LLM, ``--rerank`` exits 2 with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader.cli import main
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from tests.llm_server import LLMTestServer, Reply, fault, llm_server, openai_completion
from tests.llm_server import RecordedRequest as LLMRequest

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(60)


def answer(request: LLMRequest) -> Reply:
    """Candidates in reverse order; a recall is never sufficient."""
    numbers = re.findall(r"^\[(\d+)\]", request.messages[-1]["content"], flags=re.M)
    said = {"order": [int(n) for n in numbers][::-1]} if numbers else {"sufficient": False}
    return Reply(body=openai_completion(json.dumps(said)))


def write_config(path: Path, llm: dict[str, Any] | None) -> str:
    settings: dict[str, Any] = {"embedder": {"backend": "hash"}}
    if llm is not None:
        settings["llm"] = llm
    path.write_text(yaml.safe_dump({"backend": "simple_struct", "config": settings}))
    return str(path)


@pytest.fixture
def where(tmp_path: Path, llm_server: LLMTestServer) -> tuple[str, str, str]:
    """A store with ana's three memories and bob's one; a config with an LLM and one without."""
    llm_server.responder = answer
    http = {"backend": "openai", "model": "m", "base_url": llm_server.url, "api_key": "sk-x"}
    with_llm = write_config(tmp_path / "llm.yaml", {**http, "max_retries": 0})
    without = write_config(tmp_path / "hash.yaml", None)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with open_store(url, embedder=HashEmbedder()) as store:
        store.add_memory("Ana adopted a cat named Miso.", user_id="ana")
        store.add_memory("Ana's cat Miso likes tuna.", user_id="ana")
        store.add_memory("Ana plays chess on Tuesdays.", user_id="ana")
        store.add_memory("Bob's cat is called Tiger.", user_id="bob")
    return url, with_llm, without


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_search_rerank_reorders_and_a_failure_says_so(
    where: tuple[str, str, str], capsys: pytest.CaptureFixture[str], llm_server: LLMTestServer
) -> None:
    url, with_llm, _ = where
    argv = ["search", "cat", "--store", url, "--user-id", "ana", "--config", with_llm, "--json"]
    plain = [hit["id"] for hit in json.loads(run(capsys, *argv)[1])["hits"]]
    code, out, err = run(capsys, *argv, "--rerank")
    hits = json.loads(out)["hits"]
    assert (code, err) == (0, []) and [hit["id"] for hit in hits] == plain[::-1]
    assert [hit["rerank"]["rank"] for hit in hits] == [1, 2, 3]
    llm_server.script([fault("http_500")])
    code, out, err = run(capsys, *argv[:-1], "--rerank")
    assert code == 0 and len(err) == 1 and "the store's order stands: LLMServerError" in err[0]


def test_context_rerank_and_recall(
    where: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, with_llm, _ = where
    common = ["--store", url, "--user-id", "ana", "--config", with_llm]
    code, out, err = run(capsys, "context", "cat", *common, "--rerank", "--json")
    assert (code, err) == (0, []) and json.loads(out)["reranked"] is True
    code, out, err = run(capsys, "recall", "cat", *common, "--json")
    data = json.loads(out)
    assert code == 0 and [t["tier"] for t in data["tiers"]] == ["category", "item", "resource"]
    assert data["items"] and "Tiger" not in out
    code, out, err = run(capsys, "recall", "cat", *common, "--tiers", "item", "--no-sufficiency")
    assert code == 0 and out.startswith("[item] ") and "Miso" in out


def test_rerank_without_an_llm_and_bad_tiers_exit_2_with_one_line(
    where: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _, without = where
    common = ["cat", "--store", url, "--user-id", "ana", "--config", without]
    for command in ("search", "context", "recall"):
        code, out, err = run(capsys, command, *common, "--rerank")
        assert (code, out, len(err)) == (2, "", 1) and "rerank=True needs an LLM" in err[0]
    code, _, err = run(capsys, "recall", *common, "--tiers", "resource")
    assert code == 2 and "the 'resource' tier reads the items' sources" in err[0]
