"""Categories on MemoryBank (issue 21): how each user's memory sorts into categories, what
the summaries cost, and how long ``export-md`` takes.

Run by hand, on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/category_memory.py \
        --example-out docs/memory_example

MemoryBank English (``data/memorybank``), each user's days read one at a time in
fast mode (the bundled local embedder, int8) and each day's items written into a fresh SQLite
store with the reader's category keeper, as ``memreader read --store`` does: one write per
day. Two runs:

- **deterministic** summaries (fast mode's): per user, the categories that hold items, the
  share of items in the catch-all, the summary updates per write, and the wall time.
- **llm** summaries (``summaries.mode: llm``) against a stand-in model on 127.0.0.1 that
  restates every item it is shown, citing it: the largest summary a model could keep, so the
  prompt characters are an upper bound for these items. Calls and prompt characters per write.

Then ``export_markdown`` of every user, timed; ``--example-out`` copies one user's files (for
the README). Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import MEMORYBANK, machine_info

from memreader.categories.maintainer import CategoryMaintainer, SummaryUpdate
from memreader.categories.markdown import export_markdown, user_folder
from memreader.categories.markdown_files import ExportReport, plan_folder, publish
from memreader.factory import MemReaderConfigFactory
from memreader.llms import LLMRouter
from memreader.llms.config import LLMSlots
from memreader.scenes.memorybank import load_memorybank
from memreader.stores import open_store


class StandIn(BaseHTTPRequestHandler):
    """An OpenAI-compatible model that answers a category summary request by restating every
    numbered item, each sentence citing its item."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        items = prompt.split("ITEMS:\n", 1)[-1].splitlines()
        sentences = []
        for line in items:
            number, _, text = line.partition("] ")
            sentences.append({"text": text.split(") ", 1)[-1], "refs": [int(number.strip("["))]})
        content = json.dumps({"sentences": sentences})
        answer = {
            "id": "x",
            "object": "chat.completion",
            "model": "stand-in",
            "created": 0,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": len(content) // 4,
                "total_tokens": 0,
            },
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


def run(users: dict[str, Any], folder: Path, llm_url: str | None) -> dict[str, Any]:
    summaries = {"mode": "llm" if llm_url else "deterministic"}
    config = {"config": {"categories": {"summaries": summaries}}}
    reader = MemReaderConfigFactory.from_dict(config).build()
    updates: list[SummaryUpdate] = []
    llm = None
    if llm_url is not None:
        llm = LLMRouter(
            LLMSlots(
                llm={
                    "backend": "openai",
                    "model": "m",
                    "base_url": llm_url,
                    "api_key": "x",
                    "max_retries": 0,
                }
            )
        )
    keeper = CategoryMaintainer(
        reader.config.categories, embedder=reader.embedder, llm=llm, on_update=updates.append
    )
    writes, per_write, started = 0, [], time.perf_counter()
    with open_store(
        f"sqlite:///{folder / 'memory.db'}", category_keeper=keeper, text_only=True
    ) as store:
        for user, days in users.items():
            for day, scene in enumerate(days):
                info = {"user_id": user, "session_id": f"{user}:day{day}"}
                items = [i for s in reader.get_memory([scene], info=info) for i in s]
                before = len(updates)
                store.write(items)
                writes += 1
                per_write.append(updates[before:])
        wall = time.perf_counter() - started
        per_user = {}
        for user in users:
            categories = store.categories(user)
            held = {c.name: len(c.item_ids) for c in categories if c.item_ids}
            items = {i for c in categories for i in c.item_ids}
            per_user[user] = {
                "categories": len(held),
                "items": len(items),
                "catch_all": len(set(next(c.item_ids for c in categories if c.name == "other"))),
            }
        export_started = time.perf_counter()
        out = folder / "md"
        paths = export_markdown(store, list(users), str(out))
        export_s = time.perf_counter() - export_started
    reader.close()
    return {
        "wall_s": wall,
        "writes": writes,
        "per_write": per_write,
        "per_user": per_user,
        "export_s": export_s,
        "files": len(paths),
        "out": out,
    }


def describe(name: str, result: dict[str, Any]) -> list[str]:
    per_user = result["per_user"].values()
    counts = [u["categories"] for u in per_user]
    share = sum(u["catch_all"] for u in per_user) / max(1, sum(u["items"] for u in per_user))
    updates = [len(w) for w in result["per_write"]]
    calls = [sum(u.llm_calls for u in w) for w in result["per_write"]]
    chars = [sum(u.prompt_chars for u in w) for w in result["per_write"]]
    notes = [u.note for w in result["per_write"] for u in w if u.note]
    return [
        f"| {name} | {len(counts)} | {min(counts)}-{max(counts)} (median "
        f"{statistics.median(counts):g}) | {share:.1%} | {statistics.mean(updates):.1f} | "
        f"{statistics.mean(calls):.1f} | {statistics.mean(chars):,.0f} (max {max(chars):,}) | "
        f"{result['wall_s']:.1f} s / {result['writes']} writes | "
        f"{result['export_s'] * 1000:.0f} ms ({result['files']} files) | {len(notes)} |"
    ]


def copy_example(source: Path, target: Path) -> None:
    """The exported files of ``source`` into ``target`` under the export's own rule: only the
    files a previous copy wrote there (its manifest says so) are replaced or removed, and a
    folder holding anything else is refused (never ``rmtree``: ``--example-out`` is the user's
    folder)."""
    files = {p.name: p.read_bytes() for p in sorted(source.glob("*.md"))}
    publish(plan_folder(str(target), files, allow_foreign=False), ExportReport())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example-out", default=None, help="copy the first user's files here")
    args = parser.parse_args()
    users = load_memorybank(MEMORYBANK)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    lines = [
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/category_memory.py "
        f"{shlex.join(sys.argv[1:])}`",
        f"Machine: `{json.dumps(machine_info())}`",
        "",
        "| summaries | users | categories holding items per user | items in the catch-all | "
        "summary updates per write | LLM calls per write | prompt chars per write | "
        "read + write | export-md (all users) | repairs / fallbacks |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, llm in (("deterministic", None), ("llm (stand-in)", url)):
            print(f"{name} ...", file=sys.stderr)
            folder = Path(tmp) / name.split()[0]
            folder.mkdir()
            result = run(users, folder, llm)
            lines += describe(name, result)
            if args.example_out and llm is None:
                first = next(iter(users))
                copy_example(result["out"] / user_folder(first), Path(args.example_out))
    server.shutdown()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
