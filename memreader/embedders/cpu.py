"""What this machine's CPU offers, as far as quantised kernels care.

ONNX Runtime picks its int8 kernels by CPU feature (x86: SSE4.1, AVX2, AVX-512, VNNI, AMX;
ARM64: dot product, i8mm, SVE), and some of them round differently or saturate. A result that
depends on those features is checked once per :func:`cpu_signature`, and the features that
matter are shown beside it (``memreader models info``).

On Linux the features come from ``/proc/cpuinfo`` (the kernel's view, which also hides what the
operating system does not enable); elsewhere the signature is the machine type and processor
name only, which is coarser but still keys a check per kind of machine.
"""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from pathlib import Path

from memreader.files import FileRefused, read_regular_file

__all__ = ["INT8_FEATURES", "CpuSignature", "cpu_signature"]

#: The CPU features that choose an int8 matrix kernel in ONNX Runtime (x86 flags and ARM64
#: ``Features`` as /proc/cpuinfo spells them).
INT8_FEATURES = (
    # x86-64
    "sse4_1",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx_vnni",
    "avx_vnni_int8",
    "amx_tile",
    "amx_int8",
    # ARM64
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
    "sve2",
    "sme",
)

_CPUINFO = Path("/proc/cpuinfo")
_MAX_CPUINFO_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class CpuSignature:
    """The machine type, the processor's name and the :data:`INT8_FEATURES` it offers."""

    machine: str
    processor: str
    features: tuple[str, ...]

    @property
    def digest(self) -> str:
        """A short stable digest of the signature (part of cache keys)."""
        text = "\0".join((self.machine, self.processor, *self.features))
        return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]

    def describe(self) -> str:
        """One line: ``x86_64, Intel(R) Xeon(R) ..., avx2 avx512_vnni ...``."""
        features = " ".join(self.features) or "no int8-relevant features found"
        return f"{self.machine}, {self.processor or 'unknown processor'}, {features}"


def cpu_signature() -> CpuSignature:
    """The signature of the CPU this process runs on."""
    machine = platform.machine() or "unknown"
    fields = _cpuinfo_fields()
    processor = (
        fields.get("model name") or fields.get("cpu model") or fields.get("cpu part") or ""
    ).strip() or platform.processor()
    offered = set((fields.get("flags") or fields.get("features") or "").split())
    features = tuple(name for name in INT8_FEATURES if name in offered)
    return CpuSignature(machine=machine, processor=processor, features=features)


def _cpuinfo_fields() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` (lower-case keys); empty elsewhere."""
    try:
        text = read_regular_file(_CPUINFO, _MAX_CPUINFO_BYTES).decode("utf-8", "replace")
    except (FileRefused, OSError):
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    return fields
