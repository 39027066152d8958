"""The ``memreader`` command line.

``memreader read INPUT --type chat|doc --mode fast [--config FILE] [-o OUT.jsonl]`` reads a JSON
file of scenes (or a MemoryBank file, or for ``doc`` any document file), writes one JSON item per
line, and exits non-zero with a one-line message on bad input.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from memreader.config import MemReaderConfigFactory
from memreader.datasets import is_memorybank, memorybank_scenes
from memreader.errors import InputError, MemReaderError
from memreader.factory import MemReaderFactory
from memreader.items import TextualMemoryItem
from memreader.report import ReadReport

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
# Scenes per get_memory call: large enough to batch embeddings, small enough to show progress.
SCENES_PER_CALL = 16


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memreader", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True)
    read = commands.add_parser("read", help="read scenes or documents into memory items (JSONL)")
    read.add_argument(
        "input", help="JSON file of scenes, a MemoryBank file, a document, or - for stdin"
    )
    read.add_argument("--type", choices=("chat", "doc"), default="chat")
    read.add_argument("--mode", choices=("fast", "fine"), default="fast")
    read.add_argument("--config", help="reader config YAML (default: built-in local defaults)")
    read.add_argument("-o", "--output", help="output JSONL file (default: stdout)")
    read.add_argument("--user-id", default="cli-user")
    read.add_argument("--session-id", default="cli-session")
    read.add_argument(
        "--tag", action="append", default=[], dest="tags", help="custom tag (repeatable)"
    )
    read.add_argument("--max-tokens", type=int, help="window budget in tokens (overrides config)")
    read.add_argument("--overlap", type=int, help="window overlap in tokens (overrides config)")
    read.add_argument(
        "--no-embedding", action="store_true", help="do not embed (items carry no embedding)"
    )
    read.add_argument("--report", help="write the per-window report (status, usage) as JSON here")
    llm = read.add_argument_group(
        "fine mode LLM",
        "override the config's `llm`; defaults come from MEMREADER_LLM_BACKEND, "
        "MEMREADER_LLM_MODEL, MEMREADER_LLM_BASE_URL and OPENAI_API_KEY",
    )
    llm.add_argument("--llm-backend", choices=("openai", "ollama"))
    llm.add_argument("--llm-model")
    llm.add_argument("--llm-base-url", help="e.g. http://127.0.0.1:8080/v1 (llama.cpp server)")
    llm.add_argument(
        "--llm-api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (keys are never taken as arguments)",
    )
    llm.add_argument(
        "--structured-output", choices=("json_schema", "json_object_schema", "tool_call", "prompt")
    )
    llm.add_argument("--llm-concurrency", type=int, help="LLM requests in flight at most")
    llm.add_argument("--no-filter", action="store_true", help="skip the hallucination filter")
    llm.add_argument("--no-rewrite", action="store_true", help="skip the rewrite pass")
    progress = read.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None)
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memreader`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return _read(args)
    except MemReaderError as exc:
        print(f"memreader: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT if isinstance(exc, InputError | ValueError) else EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


def _config(args: argparse.Namespace) -> MemReaderConfigFactory:
    cfg = MemReaderConfigFactory.from_yaml(args.config) if args.config else MemReaderConfigFactory()
    data = cfg.model_dump()
    config = data["config"]
    if args.no_embedding:
        config["embedder"] = None
    if args.max_tokens is not None:
        config["window"]["max_tokens"] = args.max_tokens
    if args.overlap is not None:
        config["window"]["overlap_tokens"] = args.overlap
    if args.mode == "fine":
        config["llm"] = _llm_settings(args, config.get("llm"))
        if args.llm_concurrency is not None:
            config["llm_max_concurrency"] = args.llm_concurrency
        if args.no_filter:
            config["fine"]["hallucination_filter"] = False
        if args.no_rewrite:
            config["fine"]["rewrite"] = "off"
    return MemReaderConfigFactory(**data)


def _llm_settings(args: argparse.Namespace, configured: dict[str, Any] | None) -> Any:
    """The config's ``llm`` with flags and environment on top (flags win)."""
    llm = dict(configured or {})
    env = os.environ
    backend = args.llm_backend or env.get("MEMREADER_LLM_BACKEND")
    model = args.llm_model or env.get("MEMREADER_LLM_MODEL")
    base_url = args.llm_base_url or env.get("MEMREADER_LLM_BASE_URL")
    for key, value in (("backend", backend), ("model", model), ("base_url", base_url)):
        if value:
            llm[key] = value
    if args.structured_output:
        llm["structured_output"] = args.structured_output
    if llm.get("api_key") is None and env.get(args.llm_api_key_env):
        llm["api_key"] = env[args.llm_api_key_env]
    if not llm.get("model"):
        return configured  # let the reader say that fine mode needs an LLM
    return llm


def _jobs(args: argparse.Namespace) -> list[tuple[dict[str, str], Any, int]]:
    """(info, scene_data, first scene's index in the input): one job per MemoryBank user, else
    one per batch of scenes."""
    info = {"user_id": args.user_id, "session_id": args.session_id}
    if args.type == "doc" and args.input != "-" and not args.input.endswith(".json"):
        if not os.path.isfile(args.input):
            raise InputError(f"no such file: {args.input}")
        return [(info, [args.input], 0)]
    data = _load_json(args.input)
    if args.type == "chat" and is_memorybank(data):
        return [
            ({"user_id": user, "session_id": f"memorybank:{user}"}, scenes, 0)
            for user, scenes in memorybank_scenes(data).items()
        ]
    if not isinstance(data, list) or not data:
        return [(info, data, 0)]
    if args.type == "chat" and all(isinstance(m, dict) for m in data):
        return [(info, data, 0)]  # one flat scene
    return [(info, data[i : i + SCENES_PER_CALL], i) for i in range(0, len(data), SCENES_PER_CALL)]


def _load_json(path: str) -> Any:
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON: {exc}") from exc


@contextmanager
def _output(path: str | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        yield handle


def _read(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    reader = MemReaderFactory.from_config(_config(args))
    jobs = _jobs(args)
    total = sum(len(scenes) if isinstance(scenes, list) else 1 for _, scenes, _ in jobs)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    count = 0
    report = ReadReport(mode=args.mode)
    with (
        _output(args.output) as out,
        tqdm(total=total, unit="scene", disable=not show or total < 2, file=sys.stderr) as bar,
    ):
        for info, scenes, scene_offset in jobs:
            part = ReadReport()
            results = reader.get_memory(
                scenes,
                type=args.type,
                info=info,
                mode=args.mode,
                custom_tags=args.tags,
                report=part,
            )
            _merge(report, part, scene_offset)
            for scene_items in results:
                for item in scene_items:
                    _write(out, item, scene_offset)
                    count += 1
            bar.update(len(scenes) if isinstance(scenes, list) else 1)
    logging.getLogger("memreader.cli").info("wrote %d items", count)
    if report.fallbacks:
        print(
            f"memreader: {len(report.fallbacks)} of {len(report.windows)} windows fell back to "
            "raw items (see --report)",
            file=sys.stderr,
        )
    if args.report:
        with _output(args.report) as handle:
            json.dump(report.to_dict(), handle, ensure_ascii=False, indent=2)
    return 0


def _merge(total: ReadReport, part: ReadReport, scene_offset: int) -> None:
    for window in part.windows:
        window.scene_index += scene_offset
        total.windows.append(window)
    if part.usage is not None:
        total.usage = part.usage if total.usage is None else total.usage + part.usage


def _write(out: IO[str], item: TextualMemoryItem, scene_offset: int) -> None:
    data = item.to_dict()
    if scene_offset:
        # Batches restart scene numbering; report indexes into the whole input file.
        for source in data["metadata"]["sources"]:
            source["scene_index"] += scene_offset
    out.write(json.dumps(data, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
