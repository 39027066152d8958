"""Each framework is imported by its adapter only: ``import memreader`` (and its
``integrations`` package) loads none of them, so a user without an extra pays nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langgraph", "langchain_core", "agents", "pydantic_ai", "llama_index", "google.adk")


@pytest.mark.timeout(180)
def test_importing_memreader_loads_no_framework() -> None:
    code = (
        "import json, sys, memreader, memreader.integrations; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's memreader, not another's
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "memreader.front" in loaded
    found = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FRAMEWORKS)]
    assert found == []
