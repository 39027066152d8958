"""The ``memreader`` command line.

``memreader read INPUT --type chat|doc --mode fast [--config FILE] [-o OUT.jsonl]`` reads a JSON
file of scenes (or a MemoryBank file; with ``--type doc`` the file is one document, whatever its
extension), writes one JSON item per line, and exits with one line on stderr and status 2 for
any error memreader raises on purpose (bad input, config, output path), or status 1 for an
unexpected one (its traceback only with ``-v``). Never a traceback otherwise.

Output files (``-o``, ``--report``) are checked before any work and written atomically: a
temporary file beside the target, renamed over it only when the whole run succeeded, so a
failed run never leaves a half-written file that looks complete.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import stat
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from typing import IO, Any

from memreader.config import read_yaml_config
from memreader.datasets import is_memorybank, memorybank_scenes
from memreader.embedders.cli import add_models_parser, run_models
from memreader.errors import InputError, MemReaderError
from memreader.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.items import TextualMemoryItem
from memreader.report import ReadReport

logger = logging.getLogger(__name__)

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
        "input",
        help="JSON file of scenes, a MemoryBank file, a document (a path, an http(s) URL or "
        "s3://bucket/key), or - for stdin",
    )
    read.add_argument("--type", choices=("chat", "doc"), default="chat")
    read.add_argument(
        "--reader",
        help="reader backend (default: the config's; simple_struct, multimodal_struct, ...). "
        "A document given as a URL or s3:// key is read by multimodal_struct unless this says "
        "otherwise",
    )
    read.add_argument("--mode", choices=("fast", "fine"), default="fast")
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
    add_models_parser(commands)
    for name, text in (
        ("ingest", "run a batch job: read every input of a job file into items (resumable)"),
        ("refine", "run a refinement job: fine items from JSONL of fast items (resumable)"),
    ):
        job = commands.add_parser(name, help=text, description=text)
        job.add_argument("job", help="the job file (YAML; see the README's Batch ingestion)")
        job.add_argument(
            "--restart", action="store_true", help="ignore the manifest: read every input again"
        )
        job.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
        if name == "ingest":
            job.add_argument(
                "--dry-run",
                action="store_true",
                help="list the inputs and the windows they make, without LLM calls or embeddings",
            )
    return parser


class OutputError(MemReaderError):
    """An output file (``-o``, ``--report``) cannot be written."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memreader`` console script: 0 on success, 2 with one line on stderr
    for any :class:`MemReaderError`, 1 with one line for anything unexpected."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.command == "models":
            return run_models(args)
        if args.command in ("ingest", "refine"):
            from memreader.batch.cli import run_job_command

            return run_job_command(args)
        return _read(args)
    except MemReaderError as exc:
        _fail(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:
        # The last resort of a command line tool: one line and status 1, never a traceback
        # (unless asked for with -v), whatever went wrong.
        hint = "" if args.verbose else " (run with -v for the traceback)"
        _fail(f"internal error: {type(exc).__name__}: {exc}{hint}")
        if args.verbose:
            logger.error("traceback of the internal error", exc_info=exc)
        return EXIT_FAILURE


def _fail(message: str) -> None:
    """Write ``message`` to stderr as exactly one line (messages may quote multi-line text)."""
    line = re.sub(r"\s*[\r\n\v\f\x85\u2028\u2029]+\s*", " ", message).strip()
    print(f"memreader: {line}", file=sys.stderr)


def _config(args: argparse.Namespace) -> MemReaderConfigFactory:
    raw = read_yaml_config(args.config) if args.config else {}
    if args.reader:
        raw["backend"] = args.reader
    elif args.type == "doc" and _is_remote(args.input) and not raw.get("backend"):
        # Only the multimodal reader fetches; a URL on the command line asks for fetching.
        raw["backend"] = "multimodal_struct"
    cfg = MemReaderConfigFactory.from_dict(raw)
    data = cfg.model_dump()
    config = data["config"]
    multimodal = data["backend"] == "multimodal_struct"
    if (
        multimodal
        and args.type == "chat"
        and args.input != "-"
        and "base_dir" not in cfg.config.model_fields_set
    ):
        # Relative paths a chat file names are relative to its own folder. Nothing is read
        # from there unless --allow-root names a root: a chat is content, often a stranger's,
        # and its folder is often $HOME or ~/Downloads (.aws/credentials, .ssh/id_rsa, .env).
        config["base_dir"] = os.path.dirname(os.path.realpath(args.input))
    if args.allow_roots:
        config["allow_local_paths"] = True
        config["allowed_roots"] = [*config["allowed_roots"], *_roots(args.allow_roots)]
    if args.no_embedding:
        config["embedder"] = None
    if args.max_tokens is not None:
        config["window"]["max_tokens"] = args.max_tokens
    if args.overlap is not None:
        config["window"]["overlap_tokens"] = args.overlap
    if args.type == "doc" and args.input != "-" and not _is_remote(args.input):
        # Local paths are off by default (input may come from strangers); the file named on
        # the command line, and only that file (with the --allow-root roots), is the user's
        # own choice.
        config["allow_local_paths"] = True
        config["allowed_roots"] = [os.path.realpath(args.input), *_roots(args.allow_roots)]
    if args.type == "doc" and args.input.startswith("s3://") and "fetch" in config:
        # The same for an s3:// document named on the command line: that object, not its
        # bucket, joins the buckets content may name (fetch.s3.allow_buckets).
        s3 = config["fetch"]["s3"]
        s3["allow_buckets"] = [*s3.get("allow_buckets", []), args.input[len("s3://") :]]
    if args.mode == "fine":
        config["llm"] = _llm_settings(args, config.get("llm"))
        if args.llm_concurrency is not None:
            config["llm_max_concurrency"] = args.llm_concurrency
        if args.no_filter:
            config["fine"]["hallucination_filter"] = False
        if args.no_rewrite:
            config["fine"]["rewrite"] = "off"
    return MemReaderConfigFactory(**data)


def _roots(paths: Sequence[str]) -> list[str]:
    """The ``--allow-root`` paths, resolved; an :class:`InputError` for one that does not
    exist (a typo must not silently allow nothing, or something else later)."""
    roots = []
    for path in paths:
        resolved = os.path.realpath(os.path.expanduser(path))
        if not os.path.exists(resolved):
            raise InputError(f"--allow-root {path}: no such file or folder")
        roots.append(resolved)
    return roots


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
    one per batch of scenes; with ``--type doc`` one job of one document."""
    info = {"user_id": args.user_id, "session_id": args.session_id}
    if args.type == "doc":
        if args.input == "-":
            # Standard input is text: a part, so it is never taken for a file path.
            return [(info, [{"type": "text", "text": _read_text("-")}], 0)]
        if _is_remote(args.input):
            return [(info, [{"type": "file", "file": {"url": args.input}}], 0)]
        if not os.path.exists(args.input):
            raise InputError(f"cannot read {args.input}: no such file")
        return [(info, [{"type": "file", "file": {"path": args.input}}], 0)]
    data = _load_json(args.input)
    if is_memorybank(data):
        return [
            ({"user_id": user, "session_id": f"memorybank:{user}"}, scenes, 0)
            for user, scenes in memorybank_scenes(data).items()
        ]
    if not isinstance(data, list) or not data:
        return [(info, data, 0)]
    if all(isinstance(m, dict) for m in data):
        return [(info, data, 0)]  # one flat scene
    return [(info, data[i : i + SCENES_PER_CALL], i) for i in range(0, len(data), SCENES_PER_CALL)]


def _is_remote(path: str) -> bool:
    return path.startswith(("http://", "https://", "s3://"))


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


class _Output:
    """An output file, written atomically: opened (so checked) before any work, written to a
    temporary file beside the target, and renamed over it by :meth:`commit`. A target that is
    not a regular file (``/dev/stdout``, a pipe) is written directly.
    """

    def __init__(self, path: str, what: str) -> None:
        self.what = what
        self.path = path
        self._temp: str | None = None
        self.target = target = os.path.realpath(path)  # replace a symlink's target, not the link
        try:
            info: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise OutputError(f"cannot write {what} {path}: {exc.strerror}") from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise OutputError(f"cannot write {what} {path}: it is a directory")
        try:
            if info is not None and not stat.S_ISREG(info.st_mode):
                # /dev/stdout, a pipe: nothing to replace, and nowhere to put a temporary file.
                self.handle: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115
                return
            if info is not None and not os.access(target, os.W_OK):
                raise PermissionError(13, "Permission denied")
            parent = os.path.dirname(target)
            os.makedirs(parent, exist_ok=True)
            fd, self._temp = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=parent
            )
            self.handle = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"cannot write {what} {path}: {exc.strerror}") from None

    def commit(self) -> None:
        """Make the written content the target's, all at once."""
        try:
            self.handle.close()
            if self._temp is not None:
                if os.path.exists(self.target):
                    os.chmod(self._temp, stat.S_IMODE(os.stat(self.target).st_mode))
                else:
                    os.chmod(self._temp, 0o666 & ~_umask())
                os.replace(self._temp, self.target)
                self._temp = None
        except OSError as exc:
            raise OutputError(f"cannot write {self.what} {self.path}: {exc.strerror}") from None

    def discard(self) -> None:
        """Drop what was written (the target keeps its old content, if any)."""
        self.handle.close()
        if self._temp is not None:
            try:
                os.unlink(self._temp)
            except OSError:
                logger.warning("could not remove the temporary file %s", self._temp)
            self._temp = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_outputs(stack: ExitStack, args: argparse.Namespace) -> list[_Output]:
    outputs = []
    for path, what in ((args.output, "output"), (args.report, "report")):
        if path is not None:
            output = _Output(path, what)
            stack.callback(output.discard)
            outputs.append(output)
    return outputs


def _read(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        # Unwritable outputs fail now, before any work (and a failed run discards both).
        outputs = _open_outputs(stack, args)
        out = outputs[0].handle if args.output is not None else sys.stdout
        report = _run(args, out)
        if args.report is not None:
            json.dump(report.to_dict(), outputs[-1].handle, ensure_ascii=False, indent=2)
        for output in outputs:
            output.commit()
    failed_parts = [p for p in report.parts if p.status == "error"]
    if failed_parts:
        print(
            f"memreader: {len(failed_parts)} of {len(report.parts)} files, images or audio "
            "parts could not be read; placeholders stand in (see --report)",
            file=sys.stderr,
        )
    if report.fallbacks:
        print(
            f"memreader: {len(report.fallbacks)} of {len(report.windows)} windows fell back to "
            "raw items (see --report)",
            file=sys.stderr,
        )
    return 0


def _run(args: argparse.Namespace, out: IO[str]) -> ReadReport:
    """Read every job and write its items to ``out``; the merged report."""
    from tqdm import tqdm

    reader = MemReaderFactory.from_config(_config(args))
    jobs = _jobs(args)
    total = sum(len(scenes) if isinstance(scenes, list) else 1 for _, scenes, _ in jobs)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    count = 0
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
            for scene_items in results:
                for item in scene_items:
                    _write(out, item, scene_offset)
                    count += 1
            bar.update(len(scenes) if isinstance(scenes, list) else 1)
    out.flush()
    logger.info("wrote %d items", count)
    return report


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


if __name__ == "__main__":
    sys.exit(main())
