"""What the batch tests build jobs from: job files with the hash embedder (``write_job``), chat
inputs (``chat_lines``), the items a job wrote (``output_items``), the ``memreader`` command in
a subprocess (``cli``) and ``Slow``, a step a job config names to be killed mid-way. A small
module on purpose: a job run in a subprocess imports it to build ``Slow``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from memreader.pipeline import Step

ROOT = Path(__file__).resolve().parents[2]


CREATED = "2026-01-01T00:00:00Z"


HASH_READER = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}


def chat_lines(n: int, tag: str) -> str:
    lines = []
    for k in range(n):
        scene = [
            {"role": "user", "content": f"{tag}: scene {k}, I like tea number {k}."},
            {"role": "assistant", "content": f"Noted {tag} {k}."},
        ]
        lines.append(json.dumps(scene))
    return "\n".join(lines) + "\n"


def write_job(folder: Path, job: dict[str, Any], name: str = "job.yaml") -> Path:
    """``job`` as a YAML job file in ``folder`` (the hash embedder and a fixed ``created_at``
    unless it says otherwise)."""
    job.setdefault("reader", HASH_READER)
    job.setdefault("created_at", CREATED)
    path = folder / name
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def output_items(folder: Path) -> list[str]:
    """Every item line of every output file, sorted (byte-level comparison)."""
    lines: list[str] = []
    for path in sorted(folder.rglob("*.jsonl")):
        if not path.name.startswith("_"):
            lines.extend(line for line in path.read_text().splitlines() if line)
    return sorted(lines)


def cli(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memreader.cli", *args],
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Slow(Step):
    """A step that takes a moment per call, so a test can kill a job mid-way."""

    name = "slow"
    requires = ("emitted",)
    produces = ("emitted",)

    def run(self, state: Any, runtime: Any) -> None:
        time.sleep(0.15)
