"""The int8 file is right on every CPU, and is checked on the one it runs on.

- every quantised weight fits 7 bits, so no ONNX Runtime kernel can saturate (the build refuses a
  file that does not);
- a wrong int8 file (weights scaled wrongly, as a saturating kernel or a bad build would give)
  is caught by the load-time probe: the embedder uses fp32, warns once, names itself fp32, and
  ``memreader models info`` shows why;
- the verdict is cached per CPU signature (another CPU checks for itself);
- a file built by the old full-range scheme is never loaded again: the new one is built;
- the CPU signature holds the features that choose the kernels.

The model files come from the user cache (``make install`` builds them); each test works in a
temporary ``MEMREADER_CACHE_DIR`` holding copies of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memreader.cli import main
from memreader.embedders import LocalEmbedder, build_embedder, model_files
from memreader.embedders import cpu as cpu_module
from memreader.embedders import int8_check as check_module
from memreader.embedders import local as local_module
from memreader.embedders.cpu import CpuSignature, cpu_signature
from memreader.embedders.int8_check import MIN_COSINE, PROBE_TEXTS, cosines
from memreader.embedders.model_files import (
    BUNDLED_MODEL_NAME,
    build_model_files,
    bundled_model_path,
    model_file_name,
    model_folder,
    record_in_manifest,
)
from memreader.embedders.quantize import check_weight_range
from memreader.errors import EmbeddingError

pytestmark = pytest.mark.slow

MODEL_DIR = Path(bundled_model_path())
FP32_NAME = f"local:{BUNDLED_MODEL_NAME}"


def _local(precision: str = "int8", **config: Any) -> LocalEmbedder:
    embedder = build_embedder({"backend": "local", "config": {"precision": precision, **config}})
    assert isinstance(embedder, LocalEmbedder)
    return embedder


@pytest.fixture(scope="module")
def built() -> dict[str, bytes]:
    """The bytes of the user cache's fp32 and int8 files (built there if missing)."""
    paths = build_model_files(MODEL_DIR, BUNDLED_MODEL_NAME)
    return {precision: path.read_bytes() for precision, path in paths.items()}


@pytest.fixture
def cache(
    built: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A temporary cache holding copies of the built files, no session or verdict loaded."""
    monkeypatch.setenv("MEMREADER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local_module, "_SESSIONS", {})
    monkeypatch.setattr(local_module, "_CHECKS", {})
    folder = model_folder(MODEL_DIR, BUNDLED_MODEL_NAME)
    for precision, data in built.items():
        _install(folder, model_file_name(precision), data)  # type: ignore[arg-type]
    yield folder


def _install(folder: Path, name: str, data: bytes) -> None:
    """Put ``data`` into the cache as ``name``, recorded in the manifest as a build would."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    record_in_manifest(folder, name, data, {"source": "test"})


def _damaged(int8: bytes) -> bytes:
    """The int8 file with the first layer's weight scales four times too large: vectors far
    from fp32, as a saturating kernel or a wrong build gives, in a file whose checksum is
    right (so only the probe can tell)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(int8)
    for tensor in model.graph.initializer:
        if tensor.name in ("l0_qkv_w_scale", "l0_ffn_up_w_scale"):
            scaled = (numpy_helper.to_array(tensor) * 4).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(scaled, tensor.name))
    return bytes(model.SerializeToString())


def _checks(folder: Path) -> list[Path]:
    return sorted((folder / "int8-checks").glob("*.json"))


# -- the scheme cannot saturate -----------------------------------------------------------------


def test_every_int8_weight_fits_seven_bits(built: dict[str, bytes]) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(built["int8"])
    weights = [
        numpy_helper.to_array(t)
        for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.INT8 and t.name.endswith("_quantized")
    ]
    assert len(weights) == 18  # qkv, attention output and ffn up of 6 layers; ffn down is fp32
    assert min(int(w.min()) for w in weights) >= -64 and max(int(w.max()) for w in weights) <= 64
    # u8 activations times these weights, added in pairs (pmaddubsw), fit int16: no saturation.
    assert np.iinfo(np.int16).max >= 2 * 255 * 64
    names = {node.name for node in model.graph.node}
    assert {f"l{i}_ffn_down" for i in range(6)} <= names  # the fp32 MatMuls, kept by name


def test_a_full_range_int8_file_is_refused_by_the_build(built: dict[str, bytes]) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(built["int8"])
    for tensor in model.graph.initializer:
        if tensor.name == "l3_ffn_up_w_quantized":
            values = numpy_helper.to_array(tensor).copy()
            values[0, 0] = -128
            tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))
    with pytest.raises(EmbeddingError, match=r"outside \[-64, 64\].*'l3_ffn_up_w_quantized'"):
        check_weight_range(model.SerializeToString())


# -- the probe where it runs --------------------------------------------------------------------


def test_a_good_int8_file_passes_and_is_used(cache: Path) -> None:
    embedder = _local()
    assert embedder.precision == "int8" and embedder.name == f"{FP32_NAME}:int8"
    check = embedder.int8_check
    assert check is not None and check.usable and check.texts == len(PROBE_TEXTS)
    assert MIN_COSINE <= check.min_cosine <= check.mean_cosine <= 1.0
    assert check.cpu == cpu_signature()
    assert len(_checks(cache)) == 1


def test_a_damaged_int8_file_is_caught_and_fp32_is_used_with_one_warning(
    cache: Path, built: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    _install(cache, model_file_name("int8"), _damaged(built["int8"]))
    with caplog.at_level(logging.WARNING, logger="memreader"):
        first, second = _local(), _local()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert "int8 vectors of all-MiniLM-L6-v2 are wrong on this CPU" in message
    assert "using fp32 instead" in message and "precision: fp32" in message
    assert "check_int8: false" in message and "memreader models info" in message
    for embedder in (first, second):
        assert embedder.precision == "fp32" and embedder.name == FP32_NAME
        assert embedder.int8_check is not None and not embedder.int8_check.usable
        assert embedder.int8_check.min_cosine < MIN_COSINE
    # The vectors are fp32's, so items carry the fp32 name honestly.
    got = first.embed(list(PROBE_TEXTS[:3]))
    want = _local("fp32").embed(list(PROBE_TEXTS[:3]))
    assert np.allclose(got, want, atol=1e-6)
    # The reader's items name the precision in use.
    from memreader import SimpleStructMemReader

    reader = SimpleStructMemReader()
    scene = [{"role": "user", "content": "I moved to Porto."}]
    (items,) = reader.get_memory([scene], type="chat", info={"user_id": "u", "session_id": "s"})
    assert items[0].metadata.embedding is not None
    assert items[0].metadata.embedding_model == FP32_NAME


def test_models_info_shows_the_verdict_and_the_cpu(
    cache: Path, built: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "info"]) == 0
    out = capsys.readouterr().out
    assert "precision    int8" in out and "int8 check   passed: min cosine" in out
    assert f"cpu          {cpu_signature().describe()}" in out
    _install(cache, model_file_name("int8"), _damaged(built["int8"]))
    local_module._CHECKS.clear()
    local_module._SESSIONS.clear()
    assert main(["models", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["precision_in_use"] == "fp32" and info["precision_configured"] == "int8"
    assert info["int8_check"]["usable"] is False
    assert info["int8_check"]["min_cosine"] < MIN_COSINE
    assert info["int8_check"]["cpu"]["features"] == list(cpu_signature().features)
    assert info["int8_scheme"] == "s7" and info["files"]["int8"].endswith("model-int8-s7.onnx")


def test_check_int8_false_uses_int8_unchecked(cache: Path, built: dict[str, bytes]) -> None:
    _install(cache, model_file_name("int8"), _damaged(built["int8"]))
    embedder = _local(check_int8=False)
    assert embedder.precision == "int8" and embedder.int8_check is None
    assert embedder.name == f"{FP32_NAME}:int8"
    assert _checks(cache) == []


def test_the_verdict_is_cached_per_cpu_signature(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[int] = []

    def counting(a: Any, b: Any) -> Any:
        probes.append(1)
        return cosines(a, b)

    monkeypatch.setattr(check_module, "cosines", counting)
    avx2 = CpuSignature("x86_64", "AMD EPYC 7B13", ("sse4_1", "avx2", "fma"))
    vnni = CpuSignature("x86_64", "Intel Xeon", ("sse4_1", "avx2", "avx512f", "avx512_vnni"))
    signature = [avx2]
    monkeypatch.setattr(check_module, "cpu_signature", lambda: signature[0])

    def new_process() -> LocalEmbedder:
        local_module._CHECKS.clear()
        local_module._SESSIONS.clear()
        return _local()

    first = new_process()
    assert len(probes) == 1 and first.int8_check is not None
    assert first.int8_check.cpu == avx2
    again = new_process()  # the same CPU: the saved verdict, no probe
    assert len(probes) == 1 and again.int8_check == first.int8_check
    signature[0] = vnni  # another CPU sharing the cache checks for itself
    other = new_process()
    assert len(probes) == 2 and other.int8_check is not None and other.int8_check.cpu == vnni
    assert len(_checks(cache)) == 2
    signature[0] = avx2
    new_process()
    assert len(probes) == 2
    # --recheck runs it again
    assert main(["models", "info", "--recheck"]) == 0
    assert len(probes) == 3


def test_an_unreadable_verdict_is_checked_again(cache: Path) -> None:
    _local()
    (path,) = _checks(cache)
    path.write_text("{not json")
    local_module._CHECKS.clear()
    embedder = _local()
    assert embedder.int8_check is not None and embedder.int8_check.usable
    assert json.loads(path.read_text())["usable"] is True


# -- the old scheme is never loaded again -------------------------------------------------------


def _old_scheme(fp32: bytes, tmp_path: Path) -> bytes:
    """Version 2's int8 file: full-range asymmetric int8 weights, every MatMul quantised."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source, target = tmp_path / "fp32.onnx", tmp_path / "old-int8.onnx"
    source.write_bytes(fp32)
    quantize_dynamic(
        source,
        target,
        per_channel=True,
        weight_type=QuantType.QInt8,
        extra_options={"WeightSymmetric": False},
    )
    return target.read_bytes()


def test_a_file_built_by_the_old_scheme_is_never_loaded(
    built: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMREADER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local_module, "_SESSIONS", {})
    monkeypatch.setattr(local_module, "_CHECKS", {})
    old = _old_scheme(built["fp32"], tmp_path)
    # A cache as version 2 left it: its folder (digest of build version 2), model-int8.onnx.
    with monkeypatch.context() as patch:
        patch.setattr(model_files, "BUILD_VERSION", 2)
        old_folder = model_folder(MODEL_DIR, BUNDLED_MODEL_NAME)
    _install(old_folder, "model-int8.onnx", old)
    _install(old_folder, "model-fp32.onnx", built["fp32"])
    # Even an old-scheme file under the old name in today's folder is not taken.
    folder = model_folder(MODEL_DIR, BUNDLED_MODEL_NAME)
    assert folder != old_folder
    _install(folder, "model-int8.onnx", old)
    read: list[str] = []
    verified = model_files.read_verified

    def recording(path: Path, *args: Any) -> bytes:
        read.append(path.name)
        return verified(path, *args)

    monkeypatch.setattr(model_files, "read_verified", recording)
    embedder = _local()
    assert "model-int8.onnx" not in read and "model-int8-s7.onnx" in read
    assert embedder.precision == "int8"
    new = (folder / "model-int8-s7.onnx").read_bytes()
    assert new == built["int8"], "the new scheme was built (deterministic bytes)"
    assert (old_folder / "model-int8.onnx").read_bytes() == old, "the old folder is left alone"


# -- the CPU signature ----------------------------------------------------------------------------


def test_the_cpu_signature_holds_the_features_that_choose_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
        "flags\t\t: fpu sse4_1 avx2 fma bmi2\n\nprocessor\t: 1\nmodel name\t: other\n"
    )
    monkeypatch.setattr(cpu_module, "_CPUINFO", x86)
    amd = cpu_signature()
    assert amd.processor == "AMD EPYC 7B13" and amd.features == ("sse4_1", "avx2", "fma")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp i8mm sve\nCPU part\t: 0xd40\n")
    monkeypatch.setattr(cpu_module, "_CPUINFO", arm)
    neoverse = cpu_signature()
    assert neoverse.features == ("asimd", "asimddp", "i8mm", "sve")
    assert neoverse.digest != amd.digest and len(neoverse.digest) == 16
    monkeypatch.setattr(cpu_module, "_CPUINFO", tmp_path / "missing")
    assert cpu_signature().features == ()
