"""Batch ingestion: messages/s in fast mode for the local engine with 1 and 2 workers and for Ray,
the manifest's overhead, and peak RSS against input size.

Run by hand (results go to benchmarks/RESULTS.md with machine, command and date)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/batch.py [--files 8] [--scenes 150] [--no-ray]

- Throughput: ``--files`` generated JSONL chat files of ``--scenes`` scenes (4 messages each),
  the default local embedder (ONNX int8) with ``threads`` = cores / workers, so 2 workers on 2
  cores do not oversubscribe. Each engine runs the job into a fresh output folder; its wall time
  includes starting the workers (processes or Ray actors) and loading the model in each.
- Manifest overhead: the same job again (every input skipped: discovery, hashing and the
  manifest only), against the full run.
- Memory: one JSONL file of each size read by a job in a fresh process with no embedder (the
  reader's windowing and the JSONL sink only); peak RSS of that process (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memreader.batch.job import JobConfig  # noqa: E402
from memreader.batch.job_run import run_job  # noqa: E402

WORDS = [
    "tea",
    "coffee",
    "Lisbon",
    "piano",
    "lesson",
    "trip",
    "budget",
    "rent",
    "weekend",
    "garden",
    "book",
    "movie",
    "dinner",
    "friend",
    "office",
    "meeting",
    "project",
    "deadline",
    "running",
    "marathon",
    "doctor",
    "appointment",
    "birthday",
    "gift",
]


def write_corpus(folder: Path, files: int, scenes: int, seed: int = 0) -> int:
    """``files`` JSONL files of ``scenes`` scenes; the number of messages written."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    messages = 0
    for f in range(files):
        with open(folder / f"chats-{f:03d}.jsonl", "w", encoding="utf-8") as out:
            for s in range(scenes):
                scene = []
                for m in range(4):
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 40)))
                    role = "user" if m % 2 == 0 else "assistant"
                    scene.append({"role": role, "content": f"{text} ({f}.{s}.{m})"})
                out.write(json.dumps(scene) + "\n")
                messages += 4
    return messages


def job(corpus: Path, output: Path, *, kind: str, workers: int, embed: bool = True) -> JobConfig:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // workers)
    embedder: Any = {"backend": "local", "config": {"threads": threads}} if embed else None
    return JobConfig.model_validate(
        {
            "reader": {"backend": "simple_struct", "config": {"embedder": embedder}},
            "inputs": [{"path": str(corpus), "format": "jsonl"}],
            "output": {"path": str(output)},
            "engine": {"kind": kind, "workers": workers},
            "created_at": "2026-01-01T00:00:00Z",
        }
    )


def throughput(corpus: Path, messages: int, base: Path, use_ray: bool) -> list[dict[str, Any]]:
    rows = []
    engines = [("local", 1), ("local", 2)] + ([("ray", 2)] if use_ray else [])
    for kind, workers in engines:
        output = base / f"out-{kind}-{workers}"
        spec = job(corpus, output, kind=kind, workers=workers)
        start = time.perf_counter()
        summary = run_job(spec)
        wall = time.perf_counter() - start
        assert summary.exit_code == 0, summary.to_dict()
        start = time.perf_counter()
        again = run_job(spec)
        skipped_wall = time.perf_counter() - start
        assert again.read == 0
        rows.append(
            {
                "engine": kind,
                "workers": workers,
                "inputs": summary.inputs,
                "messages": messages,
                "items": summary.counts["items"],
                "wall_s": round(wall, 2),
                "messages_per_s": round(messages / wall, 1),
                "rerun_all_skipped_s": round(skipped_wall, 3),
                "manifest_share": round(skipped_wall / wall, 4),
            }
        )
    one = rows[0]["messages_per_s"]
    for row in rows:
        row["speedup"] = round(row["messages_per_s"] / one, 2)
    return rows


_MEMORY_PROBE = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from memreader.batch.job import JobConfig
from memreader.batch.job_run import run_job
spec = JobConfig.model_validate({{
    "reader": {{"backend": "simple_struct", "config": {{"embedder": None}}}},
    "inputs": [{{"path": {path!r}, "format": "jsonl"}}],
    "output": {{"path": {out!r}}},
}})
start = time.perf_counter()
summary = run_job(spec)
print(json.dumps({{"rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "wall_s": time.perf_counter() - start, "messages": summary.counts["messages"]}}))
"""


def memory(base: Path, sizes_mib: list[int]) -> list[dict[str, Any]]:
    rows = []
    for size in sizes_mib:
        path = base / f"big-{size}.jsonl"
        scenes = 0
        with open(path, "w", encoding="utf-8") as out:
            rng = random.Random(size)
            while out.tell() < size * 1024 * 1024:
                scene = [
                    {
                        "role": "user" if m % 2 == 0 else "assistant",
                        "content": " ".join(rng.choice(WORDS) for _ in range(30)),
                    }
                    for m in range(4)
                ]
                out.write(json.dumps(scene) + "\n")
                scenes += 1
        code = _MEMORY_PROBE.format(root=str(ROOT), path=str(path), out=str(base / f"mem-{size}"))
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        probe = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(
            {
                "input_mib": round(path.stat().st_size / 1024 / 1024, 1),
                "scenes": scenes,
                "peak_rss_mib": round(probe["rss_mib"], 1),
                "wall_s": round(probe["wall_s"], 1),
                "messages_per_s": round(probe["messages"] / probe["wall_s"]),
            }
        )
        path.unlink()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--scenes", type=int, default=150)
    parser.add_argument("--sizes", default="25,100,400", help="MiB of the memory probe inputs")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        messages = write_corpus(base / "corpus", args.files, args.scenes)
        rows = throughput(base / "corpus", messages, base, not args.no_ray)
        mem = memory(base, [int(s) for s in args.sizes.split(",")])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}")
    print(json.dumps({"throughput": rows, "memory": mem}, indent=1))


if __name__ == "__main__":
    main()
