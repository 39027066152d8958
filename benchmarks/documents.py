"""Document ingestion in fast mode: pages/s and MB/s for a generated 50-page pdf and docx, the
share of time in conversion, chunking and embedding, and the work content-hash reuse saves on a
chat that repeats one file.

Run by hand (results go to benchmarks/RESULTS.md with machine, command and date)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/documents.py [--pages 50] [--rounds 3]

The reader is ``multimodal_struct`` with the default local embedder (ONNX int8) and default
windows (1024 tokens, 200 overlap). "Conversion" is the ``read_parts`` step (reading the file and
markitdown), "chunking" the ``parse`` and ``window`` steps plus item building (``fast_items``),
"embedding" the ``embed`` step. Each round uses a fresh reader, so nothing is reused between
rounds (the reader's content cache would otherwise skip the conversion).
"""

from __future__ import annotations

import argparse
import base64
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memreader import ReadReport
from memreader.readers import (
    MultiModalStructMemReader,
    MultiModalStructMemReaderConfig,
)
from tests.docgen import make_long_docx, make_long_pdf

INFO = {"user_id": "bench", "session_id": "documents"}
CHUNKING_STEPS = ("parse", "window", "note_parts", "fast_items")


def fresh_reader(folder: Path) -> MultiModalStructMemReader:
    return MultiModalStructMemReader(
        MultiModalStructMemReaderConfig(allow_local_paths=True, allowed_roots=[str(folder)])
    )


def ingest(path: Path, pages: int, rounds: int) -> dict[str, Any]:
    """Median figures over ``rounds`` fresh readers (the model is loaded before timing)."""
    size = path.stat().st_size
    runs = []
    for _ in range(rounds):
        reader = fresh_reader(path.parent)
        reader.embedder.embed(["warm up"])
        report = ReadReport()
        start = time.perf_counter()
        (items,) = reader.get_memory([str(path)], type="doc", info=INFO, report=report)
        wall = time.perf_counter() - start
        steps = report.steps
        runs.append(
            {
                "wall_s": wall,
                "conversion_s": steps.get("read_parts", 0.0),
                "chunking_s": sum(steps.get(s, 0.0) for s in CHUNKING_STEPS),
                "embedding_s": steps.get("embed", 0.0),
                "items": len(items),
                "characters": sum(len(s.content) for s in items[0].metadata.sources),
            }
        )
        reader.close()
    wall = statistics.median(r["wall_s"] for r in runs)
    result: dict[str, Any] = {
        "file": path.name,
        "bytes": size,
        "pages": pages,
        "items": runs[0]["items"],
        "wall_s": round(wall, 3),
        "pages_per_s": round(pages / wall, 2),
        "mb_per_s": round(size / wall / 1e6, 3),
    }
    for part in ("conversion", "chunking", "embedding"):
        seconds = statistics.median(r[f"{part}_s"] for r in runs)
        result[f"{part}_s"] = round(seconds, 3)
        result[f"{part}_share"] = round(seconds / wall, 3)
    return result


def reuse(path: Path, repeats: int) -> dict[str, Any]:
    """A chat whose messages attach the same docx ``repeats`` times (half by path, half as
    inline data): how many reads and conversions ran, and how many were saved."""
    data = base64.b64encode(path.read_bytes()).decode()
    messages = []
    for k in range(repeats):
        file: dict[str, str] = (
            {"path": str(path)} if k % 2 == 0 else {"filename": path.name, "file_data": data}
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"again ({k})"},
                    {"type": "file", "file": file},
                ],
            }
        )
    reader = fresh_reader(path.parent)
    reader.embedder.embed(["warm up"])
    report = ReadReport()
    start = time.perf_counter()
    reader.get_memory([messages], type="chat", info=INFO, report=report)
    wall = time.perf_counter() - start
    counts = dict(report.resources)
    again = ReadReport()
    start = time.perf_counter()
    reader.get_memory([messages], type="chat", info=INFO, report=again)
    second = time.perf_counter() - start
    reader.close()
    return {
        "parts": repeats,
        "first_call": counts,
        "first_call_s": round(wall, 3),
        "second_call": dict(again.resources),
        "second_call_s": round(second, 3),
        "conversions_saved_first_call": repeats - counts.get("converted", 0),
        "conversions_saved_second_call": repeats - again.resources.get("converted", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pdf = folder / "report.pdf"
        pdf.write_bytes(make_long_pdf(args.pages))
        docx = folder / "report.docx"
        docx.write_bytes(make_long_docx(args.pages))
        results = {
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "pdf": ingest(pdf, args.pages, args.rounds),
            "docx": ingest(docx, args.pages, args.rounds),
            "reuse": reuse(docx, args.repeats),
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
