"""int8 quantisation schemes of the local embedder: cosine to fp32 and speed, on this CPU or an
emulated one.

Each scheme is built from the same fp32 graph (``memreader.embedders.bert_onnx``) with ONNX
Runtime's ``quantize_dynamic``; the 20 texts of ``tests/embedders/test_local_onnx.py`` (14 short, 6
of about
300 wordpieces) are embedded one at a time, as the local backend runs int8, and compared with
fp32. ``--emulate CPU`` runs the int8 part again under ``qemu-x86_64 -cpu CPU`` (Debian's
``qemu-user``), so a kernel this machine does not use can be measured: ``Haswell`` has AVX2 and
FMA but no AVX-512 and no VNNI, the CPUs where full-range int8 weights saturate. Emulation is
slow (minutes per scheme): use ``--texts`` to measure fewer texts there.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/int8_schemes.py
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/int8_schemes.py --emulate Haswell --texts 14 \\
        --schemes v2-full-range,s7

The fp32 reference vectors are always computed natively (fp32 kernels do not saturate).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: name -> quantize_dynamic options (``exclude_down``: keep the ffn down-projections fp32).
SCHEMES: dict[str, dict[str, Any]] = {
    "v2-full-range": {"reduce_range": False, "symmetric": False, "unsigned": False},
    "symmetric": {"reduce_range": False, "symmetric": True, "unsigned": False},
    "uint8": {"reduce_range": False, "symmetric": False, "unsigned": True},
    "7-bit": {"reduce_range": True, "symmetric": False, "unsigned": False},
    "s7": {"reduce_range": True, "symmetric": False, "unsigned": False, "exclude_down": True},
}


def test_texts() -> list[str]:
    """The texts of tests/embedders/test_local_onnx.py (read from its source: no test imports)."""
    source = (ROOT / "tests" / "test_local_onnx.py").read_text(encoding="utf-8")
    start = source.index("SHORT_TEXTS = [")
    end = source.index("TEXTS = SHORT_TEXTS + LONG_TEXTS")
    namespace: dict[str, Any] = {}
    exec(source[start:end], namespace)
    return list(namespace["SHORT_TEXTS"]) + list(namespace["LONG_TEXTS"])


def token_ids(texts: list[str]) -> list[list[int]]:
    from memreader.embedders.model_files import resolve_model
    from memreader.embedders.tokenized import load_tokenizer

    model_dir, _ = resolve_model(None)
    tokenizer = load_tokenizer(str(model_dir / "tokenizer.json"))
    return [e.ids[:255] + e.ids[-1:] if len(e.ids) > 256 else e.ids
            for e in tokenizer.encode_batch(texts, add_special_tokens=True)]  # fmt: skip


def build(folder: Path, names: list[str]) -> None:
    """fp32.onnx and one file per scheme into ``folder`` (kept if present)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memreader.embedders.bert_onnx import build_bert_graph
    from memreader.embedders.model_files import resolve_model
    from memreader.embedders.quantize import quantize_int8

    fp32 = folder / "fp32.onnx"
    if not fp32.exists():
        fp32.write_bytes(build_bert_graph(resolve_model(None)[0]))
    logging.getLogger().setLevel(logging.ERROR)
    for name in names:
        target = folder / f"{name}.onnx"
        if target.exists():
            continue
        if name == "s7":  # the shipped scheme, exactly as memreader builds it
            target.write_bytes(quantize_int8(fp32.read_bytes()))
            continue
        options = SCHEMES[name]
        down = [n.name for n in onnx.load(str(fp32)).graph.node if n.name.endswith("_ffn_down")]
        quantize_dynamic(
            fp32,
            target,
            per_channel=True,
            reduce_range=options["reduce_range"],
            weight_type=QuantType.QUInt8 if options["unsigned"] else QuantType.QInt8,
            nodes_to_exclude=down if options.get("exclude_down") else [],
            extra_options={"WeightSymmetric": options["symmetric"]},
        )


def embed(path: Path, ids: list[list[int]], repeats: int = 1) -> tuple[Any, float]:
    """Vectors of ``ids`` (one sequence per run) and the median ms of a run of the longest
    sequences (256 wordpieces: what a window costs), one thread."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    times, vectors = [], []
    for _ in range(repeats):
        vectors = []
        for sequence in ids:
            feed = {"input_ids": np.array([sequence]), "attention_mask": np.ones((1, len(sequence)),
                    dtype=np.int64)}  # fmt: skip
            started = time.perf_counter()
            vectors.append(session.run(None, feed)[0][0])
            if len(sequence) == max(len(i) for i in ids):
                times.append(time.perf_counter() - started)
    return np.array(vectors), 1000 * float(np.median(times))


def measure(folder: Path, names: list[str], n: int, repeats: int) -> list[dict[str, Any]]:
    import numpy as np

    from memreader.embedders.int8_check import cosines

    ids = token_ids(test_texts())[:n]
    reference = folder / f"reference-{n}.npy"
    if reference.exists():
        fp32 = np.load(reference)
        fp32_ms = float("nan")
    else:
        fp32, fp32_ms = embed(folder / "fp32.onnx", ids, repeats)
    rows = [{"scheme": "fp32", "min": 1.0, "mean": 1.0, "ms_per_text": round(fp32_ms, 1)}]
    for name in names:
        vectors, ms = embed(folder / f"{name}.onnx", ids, repeats)
        found = cosines(vectors, fp32)
        low, mean = round(float(found.min()), 4), round(float(found.mean()), 4)
        rows.append({"scheme": name, "min": low, "mean": mean, "ms_per_text": round(ms, 1)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--texts", type=int, default=20, help="the first N test texts")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (native)")
    parser.add_argument("--emulate", help="a qemu-x86_64 CPU model (e.g. Haswell)")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "int8-schemes")
    parser.add_argument("--_measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [s for s in args.schemes.split(",") if s]
    args.folder.mkdir(parents=True, exist_ok=True)
    if args._measure:  # the child under emulation: vectors only, no timing repeats
        print(json.dumps(measure(args.folder, names, args.texts, 1)))
        return
    build(args.folder, names)
    import numpy as np

    from memreader.embedders.cpu import cpu_signature

    ids = token_ids(test_texts())[: args.texts]
    np.save(args.folder / f"reference-{args.texts}.npy", embed(args.folder / "fp32.onnx", ids)[0])
    if args.emulate:
        command = ["qemu-x86_64", "-cpu", args.emulate, sys.executable, __file__, "--_measure",
                   "--schemes", ",".join(names), "--texts", str(args.texts),
                   "--folder", str(args.folder)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ, check=True)
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        where = f"emulated: qemu-x86_64 -cpu {args.emulate} (host: {cpu_signature().describe()})"
    else:
        (args.folder / f"reference-{args.texts}.npy").unlink()
        rows = measure(args.folder, names, args.texts, args.repeats)
        where = cpu_signature().describe()
    import onnxruntime

    print(f"CPU: {where}; onnxruntime {onnxruntime.__version__}; {args.texts} texts")
    print("| scheme | min cosine | mean cosine | ms per longest text (1 thread) |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['scheme']} | {row['min']:.4f} | {row['mean']:.4f} | {row['ms_per_text']} |")


if __name__ == "__main__":
    main()
