"""The default embedder: the bundled all-MiniLM-L6-v2 run by ONNX Runtime, without torch.

The model's tokenizer comes from its ``tokenizer.json`` (the ``tokenizers`` package), its
network from an ONNX file built once from its weights (:mod:`memreader.embedders.model_files`),
and its mean pooling is part of that graph; vectors are normalised as the model's
``Normalize`` module does. int8 is used only where it was checked to be right
(:mod:`memreader.embedders.int8_check`): on a CPU where the check fails the embedder runs fp32,
says so once, and names itself as fp32. Nothing on this path imports torch, transformers or
sentence-transformers, so a process is ready to embed in a fraction of a second. Sessions are
shared per ``(file, threads)`` across the process; ONNX Runtime runs one session from several
threads safely.

A session takes its share of the cores (:func:`~memreader.cores.core_share`: the cores this
process may use, divided among the :data:`~memreader.cores.PROCESSES_ENV` processes that share
them, as ``memreader serve --workers N`` sets; a worker pinned to cores of its own takes them
all), and its threads sleep when they have nothing to do instead of spinning
(``session.intra_op.allow_spinning`` off): N workers never run N times the cores' threads, nor
burn a core waiting for work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memreader.cores import PROCESSES_ENV, available_cores, core_share
from memreader.embedders.backends import register_embedder
from memreader.embedders.config import LocalEmbedderConfig
from memreader.embedders.int8_check import Int8Check, run_check
from memreader.embedders.languages import LATIN
from memreader.embedders.model_files import (
    BUNDLED_MODEL_NAME,
    Precision,
    bundled_model_path,
    model_file_name,
    model_folder,
    read_manifest,
    read_model_file,
    resolve_model,
)
from memreader.embedders.model_io import read_model_json
from memreader.embedders.tokenized import TokenizedEmbedder, load_tokenizer
from memreader.errors import ConfigError, EmbeddingError

__all__ = [
    "BUNDLED_MODEL_NAME",
    "PROCESSES_ENV",
    "LocalEmbedder",
    "available_cores",
    "bundled_model_path",
    "check_int8",
]

logger = logging.getLogger(__name__)

_INSTALL_HINT = (
    "the local embedder needs ONNX Runtime and the bundled model: pip install 'memreader-ai[local]'"
    " && memreader models install"
)


@dataclass(frozen=True)
class _ModelInfo:
    dimension: int
    max_seq_length: int


def _model_info(model_dir: Path) -> _ModelInfo:
    config = read_model_json(model_dir / "config.json")
    limits = read_model_json(model_dir / "sentence_bert_config.json")
    try:
        dimension = int(config["hidden_size"])
        max_seq_length = int(limits.get("max_seq_length") or config["max_position_embeddings"])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise EmbeddingError(
            f"cannot read the model description in {str(model_dir)!r} (config.json, "
            f"sentence_bert_config.json): {e}"
        ) from e
    return _ModelInfo(dimension, max_seq_length)


_SESSIONS: dict[tuple[str, str, int], Any] = {}
_SESSIONS_LOCK = threading.Lock()
# Verdicts of this process by (model folder, int8 sha256), and the lock that makes one thread
# run the probe while the others wait for its verdict.
_CHECKS: dict[tuple[str, str], Int8Check] = {}
_CHECKS_LOCK = threading.Lock()


def _session(
    model_dir: Path, name: str, precision: Precision, threads: int, auto_build: bool
) -> Any:
    key = (str(model_dir), precision, threads)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = _load_session(model_dir, name, precision, threads, auto_build)
            _SESSIONS[key] = session
        return session


def _load_session(
    model_dir: Path, name: str, precision: Precision, threads: int, auto_build: bool
) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise EmbeddingError(_INSTALL_HINT) from e
    data = read_model_file(model_dir, name, precision, auto_build)
    started = time.perf_counter()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle threads sleep: a spinning one burns a core another worker (or process) needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: ONNX Runtime logs to stderr itself
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types for a bad model
        raise EmbeddingError(
            f"ONNX Runtime cannot load the {precision} model of {name}: {type(e).__name__}: {e}; "
            "rebuild it with `memreader models build --force`"
        ) from e
    logger.info(
        "loaded the %s ONNX model of %s (%d threads) in %.2fs",
        precision,
        name,
        threads,
        time.perf_counter() - started,
    )
    return session


def _run_session(session: Any, batch: list[list[int]]) -> Any:
    """One forward pass over id sequences (special tokens included), padded to the longest."""
    import numpy as np

    longest = max(len(ids) for ids in batch)
    input_ids = np.zeros((len(batch), longest), dtype=np.int64)
    mask = np.zeros((len(batch), longest), dtype=np.int64)
    for row, ids in enumerate(batch):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]


def _run_each(session: Any, batch: list[list[int]]) -> Any:
    """One pass per sequence: the int8 graph quantises activations with one scale per tensor,
    so in a batch a text's vector would depend on the other texts (cosine 0.98-0.99 to itself
    alone). Without padding this is as fast as batches of 32 (measured)."""
    import numpy as np

    return np.concatenate([_run_session(session, [ids]) for ids in batch])


def check_int8(
    model_path: str | None = None,
    *,
    threads: int | None = None,
    auto_build: bool = True,
    recheck: bool = False,
) -> Int8Check:
    """Whether the int8 file of a model (``None``: the bundled one) gives right vectors on this
    CPU: the verdict cached for this CPU, or a new one (``recheck``: always new; see
    :mod:`memreader.embedders.int8_check`). Builds the files first when missing and
    ``auto_build`` is on.

    >>> check_int8().usable                                         # doctest: +SKIP
    True
    """
    model_dir, name = resolve_model(model_path)
    threads = threads or core_share()
    int8 = _session(model_dir, name, "int8", threads, auto_build)
    folder = model_folder(model_dir, name)
    digest = read_manifest(folder).get(model_file_name("int8"), "")
    with _CHECKS_LOCK:
        known = _CHECKS.get((str(folder), digest))
        if known is not None and not recheck:
            return known
        fp32: list[Any] = []
        tokenizer: list[Any] = []

        def ids(texts: Sequence[str]) -> list[list[int]]:
            if not tokenizer:  # only when the probe runs (a saved verdict needs none)
                tokenizer.append(load_tokenizer(str(model_dir / "tokenizer.json")))
            limit = _model_info(model_dir).max_seq_length
            encoded = tokenizer[0].encode_batch(list(texts), add_special_tokens=True)
            return [_truncate(e.ids, limit) for e in encoded]

        def embed_fp32(texts: Sequence[str]) -> Any:
            if not fp32:  # loaded for the probe only, not kept
                fp32.append(_load_session(model_dir, name, "fp32", threads, auto_build))
            return _run_each(fp32[0], ids(texts))

        check = run_check(
            folder, digest, embed_fp32, lambda texts: _run_each(int8, ids(texts)), recheck=recheck
        )
        if not check.usable and (known is None or known.key != check.key):
            logger.warning(
                "int8 vectors of %s are wrong on this CPU (%s; %s): using fp32 instead (the "
                "reference's vectors, slower). `memreader models info` shows the check; set the "
                "embedder's precision: fp32 to choose fp32 and silence this, or check_int8: "
                "false to use int8 anyway",
                name,
                check.describe(),
                check.cpu.describe(),
            )
        _CHECKS[(str(folder), digest)] = check
        return check


def _truncate(ids: list[int], limit: int) -> list[int]:
    """``[CLS] ... [SEP]`` ids cut to ``limit`` tokens, keeping the last (special) one."""
    return ids if len(ids) <= limit else [*ids[: limit - 1], ids[-1]]


@register_embedder("local")
class LocalEmbedder(TokenizedEmbedder):
    """Embeds with a BERT sentence encoder through ONNX Runtime (default: all-MiniLM-L6-v2).

    ``name`` is ``"local:<model dir name>"``, with ``":int8"`` for int8 weights and
    ``":unnormalized"`` when ``normalize`` is off: fp32 vectors equal the sentence-transformers
    model's (cosine 1.0000), so the two backends share a name and a cache. ``precision`` is
    the precision in use: ``"fp32"`` when int8 was asked for but failed this CPU's check
    (``int8_check`` holds that verdict; ``None`` when none was made).
    ``max_input_tokens`` is the model's ``max_seq_length`` (256 for the bundled model, two of
    which are ``[CLS]``/``[SEP]``) unless configured lower.

    >>> embedder = LocalEmbedder()                                  # doctest: +SKIP
    >>> len(embedder.embed(["I like tea."])[0])                     # doctest: +SKIP
    384
    """

    config_class = LocalEmbedderConfig

    def __init__(self, config: LocalEmbedderConfig | None = None) -> None:
        config = config if config is not None else LocalEmbedderConfig()
        model_dir, model_name = resolve_model(config.model_path)
        info = _model_info(model_dir)
        limit = info.max_seq_length
        if config.max_input_tokens is not None:
            if config.max_input_tokens > limit:
                raise ConfigError(
                    "invalid config for embedder backend 'local': field 'max_input_tokens': "
                    f"{config.max_input_tokens} exceeds the model's max_seq_length {limit}"
                )
            limit = config.max_input_tokens
        tokenizer = load_tokenizer(str(model_dir / "tokenizer.json"))
        threads = config.threads or core_share()
        precision: Precision = config.precision
        self.int8_check: Int8Check | None = None
        if precision == "int8" and config.check_int8:
            self.int8_check = check_int8(
                config.model_path, threads=threads, auto_build=config.auto_build
            )
            if not self.int8_check.usable:
                precision = "fp32"
        self.precision: Precision = precision
        self._session = _session(model_dir, model_name, precision, threads, config.auto_build)
        suffix = (":int8" if precision == "int8" else "") + (
            "" if config.normalize else ":unnormalized"
        )
        super().__init__(
            tokenizer=tokenizer,
            name=f"local:{model_name}{suffix}",
            max_input_tokens=limit,
            batch_size=config.batch_size,
            normalize=config.normalize,
            dimension=info.dimension,
        )
        self.config = config
        self.model_path = str(model_dir)
        # The bundled model was trained on English text only.
        self.scripts = LATIN if config.model_path is None else None

    def _embed_ids(self, batch: list[list[int]]) -> Any:
        if self.precision == "int8":
            return _run_each(self._session, batch)
        return _run_session(self._session, batch)
