"""The reader config of a ``memreader read`` command line: the ``--config`` file's (or the
built-in defaults) with the flags on top, and what the flags allow the reader to open (the
input named on the command line and the ``--allow-root`` roots, never more: a chat is content).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from memreader.cli.llm_flags import llm_settings
from memreader.config import without_pass
from memreader.config_files import read_yaml_config
from memreader.errors import InputError
from memreader.factory import MemReaderConfigFactory

__all__ = ["allowed_roots", "is_remote", "reader_config"]


def reader_config(args: argparse.Namespace) -> MemReaderConfigFactory:
    """The reader config of a ``read`` command line: the ``--config`` file's (or the built-in
    defaults), with the flags on top."""
    raw = read_yaml_config(args.config) if args.config else {}
    if args.reader:
        raw["backend"] = args.reader
    elif args.type == "doc" and is_remote(args.input) and not raw.get("backend"):
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
        config["allowed_roots"] = [*config["allowed_roots"], *allowed_roots(args.allow_roots)]
    if args.no_embedding:
        config["embedder"] = None
    if args.store:  # items already stored are not embedded again (the dedup step)
        config["store"] = args.store
    if args.max_tokens is not None:
        config["window"]["max_tokens"] = args.max_tokens
    if args.overlap is not None:
        config["window"]["overlap_tokens"] = args.overlap
    if args.type == "doc" and args.input != "-" and not is_remote(args.input):
        # Local paths are off by default (input may come from strangers); the file named on
        # the command line, and only that file (with the --allow-root roots), is the user's
        # own choice.
        config["allow_local_paths"] = True
        config["allowed_roots"] = [os.path.realpath(args.input), *allowed_roots(args.allow_roots)]
    if args.type == "doc" and args.input.startswith("s3://") and "fetch" in config:
        # The same for an s3:// document named on the command line: that object, not its
        # bucket, joins the buckets content may name (fetch.s3.allow_buckets).
        s3 = config["fetch"]["s3"]
        s3["allow_buckets"] = [*s3.get("allow_buckets", []), args.input[len("s3://") :]]
    if args.mode == "fine":
        config["llm"] = llm_settings(args, config.get("llm"), config.get("llm_profiles"))
        if args.llm_concurrency is not None:
            config["llm_max_concurrency"] = args.llm_concurrency
        if args.no_filter:  # the way that agrees with the config's own fine.passes
            config["fine"] = without_pass(config["fine"], "filter")
        if args.no_rewrite:
            config["fine"] = without_pass(config["fine"], "rewrite")
    return MemReaderConfigFactory(**data)


def allowed_roots(paths: Sequence[str]) -> list[str]:
    """The ``--allow-root`` paths, resolved; an :class:`InputError` for one that does not
    exist (a typo must not silently allow nothing, or something else later)."""
    roots = []
    for path in paths:
        resolved = os.path.realpath(os.path.expanduser(path))
        if not os.path.exists(resolved):
            raise InputError(f"--allow-root {path}: no such file or folder")
        roots.append(resolved)
    return roots


def is_remote(path: str) -> bool:
    """Whether ``path`` names a document to fetch (HTTP or S3), not a local file."""
    return path.startswith(("http://", "https://", "s3://"))
