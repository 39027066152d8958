"""The int8 file of the local embedder: how its weights are quantised, and why that is right on
every CPU ONNX Runtime runs on (see :func:`quantize_int8`). The check that it *is* right on the
CPU at hand is :mod:`memreader.embedders.int8_check`.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from memreader.errors import EmbeddingError

__all__ = ["INT8_SCHEME", "check_weight_range", "quantize_int8"]

_DEPENDENCY_HINT = (
    "building the ONNX model needs the `onnx` and `onnxruntime` packages: "
    "pip install 'memreader-ai[local]'"
)

#: The int8 quantisation scheme, part of the int8 file's name (see :func:`_quantize`): a file
#: built by another scheme (version 2's full-range ``model-int8.onnx``, which saturates on CPUs
#: without VNNI) is never loaded, whatever folder it sits in.
INT8_SCHEME = "s7"

#: The range every quantised weight must lie in (checked after each build; see _quantize).
_S7_RANGE = (-64, 64)


def quantize_int8(fp32: bytes) -> bytes:
    """Scheme ``s7``: int8 weights in 7 bits ([-64, 64]), asymmetric, one scale and zero point
    per output channel; activations quantised to uint8 at run time, one scale per tensor (so
    the local backend runs int8 one sequence at a time); the feed-forward down-projections
    stay fp32.

    Why 7 bits: on x86 without VNNI (SSE4.1, AVX2, AVX-512 without VNNI) ONNX Runtime's u8s8
    kernels multiply with ``pmaddubsw``, which adds two uint8 x int8 products into a saturating
    int16. With full-range weights a pair can reach 2 * 255 * 128 = 65280 and is clipped to
    32767: the vectors of version 2's file fell to cosine 0.27 (min) / 0.72 (mean) to fp32 on
    an AMD EPYC with AVX2, and to 0.29 / 0.75 on an emulated Haswell. With |w| <= 64 a pair is
    at most 2 * 255 * 64 = 32640 < 32767, so no kernel can saturate: VNNI (``vpdpbusd``) and
    ARM64 (``sdot``/``udot``, or widening multiplies) add in int32 anyway, and every int32 sum
    is bounded by K * 255 * 64 with K <= 1536, far below 2**31. :func:`_check_weight_range`
    checks the range on every build.

    Why the down-projections stay fp32: their input is the GELU output, long-tailed, which one
    uint8 scale per tensor represents worst. Measured by ``benchmarks/int8_schemes.py`` on the
    20 test texts against fp32 (Xeon with AVX-512 VNNI, onnxruntime 1.32; min / mean cosine;
    time of a 256-wordpiece text on one thread relative to fp32): full-range asymmetric
    0.985 / 0.994, 0.55 (saturates without VNNI); symmetric 0.978 / 0.993, 0.67 (can still
    saturate: |w| reaches 127); uint8 weights 0.985 / 0.994, exact on every kernel but 1.20 (no
    faster than fp32: the u8u8 kernels widen to 16 bits); 7-bit everywhere 0.978 / 0.992, 0.55;
    7-bit with fp32 down-projections 0.986 / 0.996, 0.66 (this scheme, the best of them on
    every text). On an emulated Haswell (``--emulate Haswell``, 6 texts) this scheme gave
    0.995 / 0.996, the full-range one 0.29 / 0.75.
    """
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        raise EmbeddingError(_DEPENDENCY_HINT) from e
    with tempfile.TemporaryDirectory(prefix="memreader-quantize-") as folder:
        source, target = Path(folder) / "fp32.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(fp32)
        model = onnx.load_from_string(fp32)
        keep_fp32 = [node.name for node in model.graph.node if node.name.endswith("_ffn_down")]
        # The quantiser warns that the model was not pre-processed; the graph is already fused.
        quantize_logger = logging.getLogger()
        level = quantize_logger.level
        quantize_logger.setLevel(logging.ERROR)
        try:
            quantize_dynamic(
                source,
                target,
                per_channel=True,
                reduce_range=True,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=keep_fp32,
                extra_options={"WeightSymmetric": False},
            )
        finally:
            quantize_logger.setLevel(level)
        data = target.read_bytes()
    check_weight_range(data)
    return data


def check_weight_range(data: bytes) -> None:
    """Refuse an int8 model with a weight outside [-64, 64] (see :func:`quantize_int8`)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    low, high = _S7_RANGE
    for tensor in onnx.load_from_string(data).graph.initializer:
        if tensor.data_type != onnx.TensorProto.INT8 or tensor.name.endswith("zero_point"):
            continue
        values = numpy_helper.to_array(tensor)
        if values.size and (int(np.min(values)) < low or int(np.max(values)) > high):
            raise EmbeddingError(
                f"the int8 quantiser wrote weights outside [{low}, {high}] into "
                f"{tensor.name!r}: they could saturate on CPUs without VNNI; this onnxruntime "
                "version's reduce_range differs from the one memreader was measured with"
            )
