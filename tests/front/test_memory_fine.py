"""``Memory.add(mode="fine")``: the config's LLM extracts, and ``fine.passes`` with
``reconcile`` (which needs a store) works without a ``store:`` line, since ``Memory`` supplies
its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memreader import LLMRequiredError, Memory
from memreader.testing import ScriptedLLM, ScriptedRequest


def _answer(request: ScriptedRequest) -> dict[str, Any]:
    if request.schema_name == "memory_extraction":
        return {
            "memory_list": [
                {
                    "key": "home",
                    "memory_type": "UserMemory",
                    "value": "Ana lives in Porto.",
                    "source_ids": [1],
                }
            ],
            "summary": "Ana lives in Porto.",
        }
    return {"results": [], "decisions": []}


def test_fine_mode_with_reconcile_and_no_store_line(tmp_path: Path, home: Path) -> None:
    llm = ScriptedLLM(_answer)
    config = {
        "config": {
            "embedder": {"backend": "hash"},
            "llm": llm.config(),
            "fine": {"passes": ["extract", "reconcile"]},
        }
    }
    with Memory(config, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        result = m.add("I live in Porto.", user_id="ana", mode="fine")
        assert [item.memory for item in result.items] == ["Ana lives in Porto."]
        assert result.counts == {"ADD": 1} and result.report.mode == "fine"
        assert llm.requests[0].schema_name == "memory_extraction"


def test_fine_mode_without_an_llm_is_a_typed_error(memory: Memory) -> None:
    with pytest.raises(LLMRequiredError):
        memory.add("I live in Porto.", user_id="ana", mode="fine")
    assert memory.search("Porto", user_id="ana") == []
