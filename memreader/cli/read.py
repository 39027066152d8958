"""``memreader read``: scenes or one document in, one JSON memory item per line out.

``memreader read INPUT --type chat|doc --mode fast [--config FILE] [-o OUT.jsonl]`` reads a JSON
file of scenes (or a MemoryBank file; with ``--type doc`` the file is one document, whatever its
extension) and writes one JSON item per line. Its flags override the config file's settings
(:mod:`memreader.cli.read_config`); its outputs are checked before any work and written
atomically (:mod:`memreader.cli.output`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from contextlib import ExitStack
from typing import IO, Any

from memreader.cli.flags import add_scope_flags, scope_args
from memreader.cli.llm_check import check_llm_slots, configured_slots
from memreader.cli.llm_flags import add_llm_flags
from memreader.cli.output import open_outputs
from memreader.cli.read_config import is_remote, reader_config
from memreader.cli.store_access import add_store_flag
from memreader.cli.stores import StoreOutput
from memreader.cli.summary import item_summary
from memreader.errors import InputError
from memreader.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.items import TextualMemoryItem
from memreader.modes import READ_MODES
from memreader.scenes.memorybank import is_memorybank, memorybank_scenes
from memreader.steps.report import ReadReport

__all__ = ["SCENES_PER_CALL", "add_read_parser", "failure_lines", "run_read"]

logger = logging.getLogger(__name__)

# Scenes per get_memory call: large enough to batch embeddings, small enough to show progress.
SCENES_PER_CALL = 16
#: The owner of what ``read`` reads when ``--user-id`` is not given (said on stderr).
DEFAULT_USER = "cli-user"


def add_read_parser(commands: Any) -> None:
    """Add ``read`` and its flags to the subcommands ``commands``."""
    read = commands.add_parser("read", help="read scenes or documents into memory items (JSONL)")
    read.add_argument(
        "input",
        help="JSON file of scenes, a MemoryBank file, a document (a path, an http(s) URL or "
        "s3://bucket/key), or - for stdin",
    )
    read.add_argument(
        "--type",
        choices=("chat", "doc"),
        default="chat",
        help="chat: the input is scenes of messages; doc: the input is one document",
    )
    read.add_argument(
        "--reader",
        help="reader backend (default: the config's; simple_struct, multimodal_struct, ...). "
        "A document given as a URL or s3:// key is read by multimodal_struct unless this says "
        "otherwise",
    )
    read.add_argument(
        "--mode",
        choices=READ_MODES,
        default="fast",
        help="fast: no LLM (the local embedder only); fine: an LLM extracts the memories",
    )
    read.add_argument("--config", help="reader config YAML (default: built-in local defaults)")
    read.add_argument(
        "--allow-root",
        action="append",
        default=[],
        dest="allow_roots",
        metavar="DIR",
        help="a folder (or file) whose files the input may name, e.g. a chat's images and "
        "attachments (repeatable). Without it no local file named in the input is read; hidden "
        "files and folders under it stay refused unless the config sets allow_hidden_files",
    )
    read.add_argument(
        "-o",
        "--output",
        help="write the items here as JSONL, one item per line (default: a readable summary "
        "on stdout; none with --store)",
    )
    read.add_argument(
        "--json",
        action="store_true",
        help="print the items on stdout as JSONL (the machine form -o writes) instead of the "
        "summary",
    )
    add_store_flag(read, env=False)
    read.add_argument(
        "--user-id",
        help=f"the owner of the items (default: {DEFAULT_USER}, said on stderr)",
    )
    read.add_argument(
        "--session-id", default="cli-session", help="the session the scenes belong to"
    )
    add_scope_flags(read, visibility=True)
    read.add_argument(
        "--tag", action="append", default=[], dest="tags", help="custom tag (repeatable)"
    )
    read.add_argument("--max-tokens", type=int, help="window budget in tokens (overrides config)")
    read.add_argument("--overlap", type=int, help="window overlap in tokens (overrides config)")
    read.add_argument(
        "--no-embedding", action="store_true", help="do not embed (items carry no embedding)"
    )
    read.add_argument("--report", help="write the per-window report (status, usage) as JSON here")
    add_llm_flags(read)
    progress = read.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )
    progress.add_argument(
        "--no-progress", dest="progress", action="store_false", help="no progress bar"
    )


def _jobs(args: argparse.Namespace) -> list[tuple[dict[str, str], Any, int]]:
    """(info, scene_data, first scene's index in the input): one job per MemoryBank user, else
    one per batch of scenes; with ``--type doc`` one job of one document."""
    scope = scope_args(args)
    info = {"user_id": args.user_id or DEFAULT_USER, "session_id": args.session_id, **scope}
    if args.type == "doc":
        _say_default_user(args)
        if args.input == "-":
            # Standard input is text: a part, so it is never taken for a file path.
            return [(info, [{"type": "text", "text": _read_text("-")}], 0)]
        if is_remote(args.input):
            return [(info, [{"type": "file", "file": {"url": args.input}}], 0)]
        if not os.path.exists(args.input):
            raise InputError(f"cannot read {args.input}: no such file")
        return [(info, [{"type": "file", "file": {"path": args.input}}], 0)]
    data = _load_json(args.input)
    if is_memorybank(data):
        return [
            ({"user_id": user, "session_id": f"memorybank:{user}", **scope}, scenes, 0)
            for user, scenes in memorybank_scenes(data).items()
        ]
    _say_default_user(args)
    if not isinstance(data, list) or not data:
        return [(info, data, 0)]
    if all(isinstance(m, dict) for m in data):
        return [(info, data, 0)]  # one flat scene
    return [(info, data[i : i + SCENES_PER_CALL], i) for i in range(0, len(data), SCENES_PER_CALL)]


def _say_default_user(args: argparse.Namespace) -> None:
    """Mark the run as one whose items got the default owner (said on stderr at the end: a
    later ``forget`` or ``search`` needs that owner, and a silent default made them find
    nothing)."""
    args.user_defaulted = args.user_id is None


def _read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input); an :class:`InputError` otherwise."""
    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            raw = stream.read() if stream is not None else sys.stdin.read().encode()
        else:
            with open(path, "rb") as handle:
                raw = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror}") from exc
    try:
        # utf-8-sig: a byte order mark is valid UTF-8 that editors on Windows write.
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"
        ) from None


def _load_json(path: str) -> Any:
    name = "standard input" if path == "-" else path
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON: {exc}") from None
    except RecursionError:
        # The decoder recurses once per nesting level; no scene file nests this deep.
        raise InputError(f"{name} nests JSON too deeply to be a scene file") from None


def run_read(args: argparse.Namespace) -> int:
    """Run ``memreader read``: 0 once every item and the report are written and nothing failed;
    1 when something failed (each kind counted on stderr: see :func:`failure_lines`), the items
    that could be made written all the same."""
    with ExitStack() as stack:
        # Unwritable outputs fail now, before any work (and a failed run discards both).
        outputs = open_outputs(stack, args)
        out = outputs[0].handle if args.output is not None else sys.stdout
        config = reader_config(args)
        if args.mode == "fine" and not args.no_check:  # fail in seconds, before any window
            check_llm_slots(configured_slots(config.config))
        store = StoreOutput(args.store, config) if args.store else None
        if store is not None:
            stack.callback(store.close)
        # With --store and no -o (nor --json) the items go to the store only.
        quiet = store is not None and args.output is None and not args.json
        report, no_vector = _run(args, config, None if quiet else out, store)
        if args.report is not None:
            json.dump(report.to_dict(), outputs[-1].handle, ensure_ascii=False, indent=2)
        for output in outputs:
            output.commit()
    if store is not None:
        print(f"memreader: {store.summary()}", file=sys.stderr)
    if getattr(args, "user_defaulted", False):
        print(
            f"memreader: no --user-id: the items belong to user {DEFAULT_USER!r}", file=sys.stderr
        )
    failures = failure_lines(report, no_vector)
    for line in failures:
        print(f"memreader: {line}", file=sys.stderr)
    return 1 if failures else 0


def failure_lines(report: ReadReport, no_vector: int = 0) -> list[str]:
    """What failed in a read, one line per kind (none: nothing failed): windows that fell back
    to raw items, windows that gave no item, parts that could not be read, images that could
    not be described, and the ``no_vector`` items whose embedding failed."""
    lines = []
    windows = len(report.windows)
    fell_back = len(report.fallbacks)
    if fell_back:
        lines.append(f"{fell_back} of {windows} windows fell back to raw items (see --report)")
    no_item = sum(1 for w in report.windows if w.status == "error")
    if no_item:
        lines.append(f"{no_item} of {windows} windows gave no item (see --report)")
    parts = len(report.parts)
    unread = sum(1 for p in report.parts if p.status == "error")
    if unread:
        lines.append(
            f"{unread} of {parts} files, images or audio parts could not be read (see --report)"
        )
    undescribed = sum(1 for p in report.parts if p.status == "fallback")
    if undescribed:
        lines.append(
            f"{undescribed} of {parts} images could not be described; fallback items stand in "
            "(see --report)"
        )
    if no_vector:
        lines.append(f"{no_vector} items have no vector: embedding them failed (see --report)")
    return lines


def _run(
    args: argparse.Namespace,
    config: MemReaderConfigFactory,
    out: IO[str] | None,
    store: StoreOutput | None,
) -> tuple[ReadReport, int]:
    """Read every job with ``config``'s reader (``store``'s, with one) and write its items to
    ``out`` (and ``store``); the merged report and how many items failed to embed."""
    from tqdm import tqdm

    reader = store.reader if store is not None else MemReaderFactory.from_config(config)
    jobs = _jobs(args)
    total = sum(len(scenes) if isinstance(scenes, list) else 1 for _, scenes, _ in jobs)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    count = no_vector = 0
    # A person at stdout gets the summary; -o and --json get the items whole.
    summary = args.output is None and not args.json
    report = ReadReport(mode=args.mode)
    with tqdm(total=total, unit="scene", disable=not show or total < 2, file=sys.stderr) as bar:
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
            if store is not None:
                store.write(results, scene_offset)
            for scene_items in results:
                for item in scene_items:
                    count += 1
                    if out is not None and summary:
                        item_summary(out, item, count, scene_offset)
                    elif out is not None:
                        _write(out, item, scene_offset)
                    no_vector += "embedding:failed" in item.metadata.tags
            bar.update(len(scenes) if isinstance(scenes, list) else 1)
    if out is not None:
        out.flush()
    logger.info("wrote %d items", count)
    return report, no_vector


def _merge(total: ReadReport, part: ReadReport, scene_offset: int) -> None:
    for window in part.windows:
        window.scene_index += scene_offset
        for issue in window.part_issues:
            issue["scene_index"] += scene_offset
        total.windows.append(window)
    if part.usage is not None:
        total.usage = part.usage if total.usage is None else total.usage + part.usage
    for name, seconds in part.steps.items():
        total.steps[name] = total.steps.get(name, 0.0) + seconds
    for entry in part.parts:
        entry.scene_index += scene_offset
        total.parts.append(entry)
    for name, count in part.resources.items():
        total.count(name, count)


def _write(out: IO[str], item: TextualMemoryItem, scene_offset: int) -> None:
    data = item.to_dict()
    if scene_offset:
        # Batches restart scene numbering; report indexes into the whole input file.
        for source in data["metadata"]["sources"]:
            source["scene_index"] += scene_offset
    out.write(json.dumps(data, ensure_ascii=False) + "\n")
