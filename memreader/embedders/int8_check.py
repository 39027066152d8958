"""The int8 check: are the int8 vectors right on *this* CPU?

ONNX Runtime runs int8 matrix products with kernels chosen by CPU feature, and a kernel that
saturates gives vectors close to noise without any error (version 2's int8 file fell to cosine
0.27 against fp32 on an AVX2 CPU without VNNI). The quantisation was chosen so that no known
kernel saturates (:func:`memreader.embedders.quantize.quantize_int8`), and this module checks it
where it runs: a fixed set of :data:`PROBE_TEXTS` is embedded with the fp32 and the int8 file,
and int8 is used only when the worst cosine is at least :data:`MIN_COSINE`.

The verdict is cached per int8 file (its sha256), ONNX Runtime version and CPU signature
(:mod:`memreader.embedders.cpu`) in ``<model folder>/int8-checks/<key>.json``, so a machine
checks once, and a machine with another CPU sharing the cache checks for itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memreader.embedders.cpu import CpuSignature, cpu_signature
from memreader.embedders.model_files import write_atomic
from memreader.embedders.model_io import MAX_JSON_BYTES
from memreader.errors import EmbeddingError
from memreader.files import FileRefused, read_regular_file

__all__ = [
    "CHECK_VERSION",
    "MIN_COSINE",
    "PROBE_TEXTS",
    "Int8Check",
    "check_key",
    "cosines",
    "load_check",
    "run_check",
]

logger = logging.getLogger(__name__)

#: The worst cosine to fp32 over the probe texts below which int8 is not used. A correct int8
#: file gives 0.98-0.99 on these texts; the saturating kernels gave 0.27-0.92.
MIN_COSINE = 0.97

#: Bump when the comparison changes: older verdicts are then not reused (the probe texts are
#: part of the key themselves).
CHECK_VERSION = 1

#: Short and long English texts of the kinds the reader embeds (chat turns, notes, prose, a
#: window with speaker prefixes); short texts of common words lose the most to quantisation.
PROBE_TEXTS: tuple[str, ...] = (
    "Hello, my name is Emily. Nice to meet you.",
    "Thanks! That's exactly what I needed.",
    "Sounds good, see you at noon.",
    "I moved to Porto last spring and I still miss the bakeries in Lisbon.",
    "Can you remind me what time the dentist appointment is on Friday?",
    "My brother Tom is allergic to cats, so we can't adopt the kitten.",
    "The quarterly report is due on March 3rd; Sarah owns the revenue section.",
    "I prefer green tea in the morning and a glass of red wine with dinner.",
    "def add(a, b):\n    return a + b  # TODO: handle None",
    "Flight LH 1172 departs 06:45 from gate B17, seat 14C.",
    "We hiked the ridge trail for six hours; the view from the summit was worth every step.",
    "user: I think I'll quit my job next month.\nassistant: That's a big step. What made "
    "you decide?\nuser: The commute is two hours a day and my manager ignores my ideas.",
    "The committee reviewed forty-two proposals this year, funded eleven of them, and asked "
    "the remaining applicants to resubmit after addressing the reviewers' comments on budget, "
    "timeline and the evaluation plan. Most of the funded projects focus on water quality in "
    "rural schools, two on early literacy, and one on a mobile clinic that will visit the "
    "northern villages every second week from October until the end of the rainy season. "
    "Each project reports its progress in June and December, and the committee visits at "
    "least three of them a year, choosing which ones by lot so that nobody can prepare.",
    "user: [2024-02-11]: We finally picked a name for the baby: Clara, after my grandmother.\n"
    "assistant: [2024-02-11]: That's lovely. Did your grandmother live nearby when you were "
    "young?\nuser: [2024-02-11]: She lived with us until I was twelve and taught me to bake "
    "bread every Sunday. I still use her recipe, though I add more salt than she did, and "
    "my husband says it's the best bread he has ever eaten. We want Clara to learn it too.",
)


@dataclass(frozen=True)
class Int8Check:
    """The verdict of one check: whether int8 is ``usable`` on this CPU, and why."""

    usable: bool
    min_cosine: float
    mean_cosine: float
    bound: float
    texts: int
    cpu: CpuSignature
    onnxruntime: str
    int8_sha256: str
    key: str
    checked_at: str
    check_version: int = CHECK_VERSION

    def describe(self) -> str:
        """One line: the verdict and its numbers."""
        verdict = "passed" if self.usable else "FAILED"
        return (
            f"{verdict}: min cosine {self.min_cosine:.4f}, mean {self.mean_cosine:.4f} to fp32 "
            f"over {self.texts} probe texts (bound {self.bound}), checked {self.checked_at}"
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu"]["features"] = list(self.cpu.features)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Int8Check:
        """Rebuild a saved verdict; ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("cpu"), dict):
            raise ValueError("not an int8 check")
        try:
            cpu = data["cpu"]
            signature = CpuSignature(
                machine=str(cpu["machine"]),
                processor=str(cpu["processor"]),
                features=tuple(str(f) for f in cpu["features"]),
            )
            check = cls(
                usable=bool(data["usable"]),
                min_cosine=float(data["min_cosine"]),
                mean_cosine=float(data["mean_cosine"]),
                bound=float(data["bound"]),
                texts=int(data["texts"]),
                cpu=signature,
                onnxruntime=str(data["onnxruntime"]),
                int8_sha256=str(data["int8_sha256"]),
                key=str(data["key"]),
                checked_at=str(data["checked_at"]),
                check_version=int(data["check_version"]),
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"not an int8 check: {e}") from e
        return check


def check_key(int8_sha256: str, signature: CpuSignature, onnxruntime_version: str) -> str:
    """The cache key of a verdict: the file, the CPU, ONNX Runtime and the probe's version."""
    import hashlib

    text = "\0".join(
        (
            str(CHECK_VERSION),
            *PROBE_TEXTS,
            int8_sha256,
            onnxruntime_version,
            signature.digest,
            str(MIN_COSINE),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _check_path(folder: Path, key: str) -> Path:
    return folder / "int8-checks" / f"{key}.json"


def load_check(folder: Path, key: str) -> Int8Check | None:
    """The cached verdict ``key`` in the model ``folder``; ``None`` when missing or unreadable
    (it is then checked again)."""
    path = _check_path(folder, key)
    try:
        check = Int8Check.from_json(json.loads(read_regular_file(path, MAX_JSON_BYTES)))
    except FileNotFoundError:
        return None
    except (FileRefused, OSError, ValueError, RecursionError) as e:
        logger.info("ignoring the unreadable int8 check %s (%s); checking again", path, e)
        return None
    return check if check.key == key else None


def cosines(a: Any, b: Any) -> Any:
    """Row-wise cosines of two ``(n, dim)`` arrays (float64)."""
    import numpy as np

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    return (x * y).sum(axis=1) / np.maximum(norms, 1e-30)


def run_check(
    folder: Path,
    int8_sha256: str,
    embed_fp32: Callable[[Sequence[str]], Any],
    embed_int8: Callable[[Sequence[str]], Any],
    *,
    recheck: bool = False,
) -> Int8Check:
    """The verdict for the int8 file ``int8_sha256`` of ``folder`` on this CPU: the cached one,
    or a new one from embedding :data:`PROBE_TEXTS` with both precisions (``recheck``: always
    new), saved for the next process.

    Raises :class:`EmbeddingError` when the probe cannot run (not when it fails: a failed
    probe is a verdict with ``usable`` false).
    """
    import numpy as np
    import onnxruntime

    signature = cpu_signature()
    key = check_key(int8_sha256, signature, onnxruntime.__version__)
    if not recheck:
        cached = load_check(folder, key)
        if cached is not None:
            return cached
    found = cosines(embed_int8(PROBE_TEXTS), embed_fp32(PROBE_TEXTS))
    worst = float(np.min(found)) if np.all(np.isfinite(found)) else float("nan")
    check = Int8Check(
        usable=bool(worst >= MIN_COSINE),  # NaN (non-finite vectors) is never usable
        min_cosine=round(worst, 6),
        mean_cosine=round(float(np.mean(found)), 6),
        bound=MIN_COSINE,
        texts=len(PROBE_TEXTS),
        cpu=signature,
        onnxruntime=onnxruntime.__version__,
        int8_sha256=int8_sha256,
        key=key,
        checked_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    try:
        data = (json.dumps(check.to_json(), indent=2) + "\n").encode()
        write_atomic(_check_path(folder, key), data)
    except EmbeddingError as e:  # a read-only cache: the verdict holds for this process only
        logger.warning("cannot save the int8 check (%s); it will run again next time", e)
    logger.info("int8 check of %s: %s", folder.name, check.describe())
    return check
