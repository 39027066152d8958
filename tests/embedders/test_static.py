"""The ``static`` embedder: token vectors distilled from the bundled all-MiniLM-L6-v2.

The full static model is distilled once into the user cache (about a minute on two cores the
first time; later runs load the cached file); the determinism test distils a part of the
vocabulary twice, into two temporary caches.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memreader.embedders import EmbedderConfig, StaticEmbedder, build_embedder
from memreader.embedders.config import LocalEmbedderConfig, StaticEmbedderConfig
from memreader.embedders.languages import LATIN, unknown_spans, unreadable_share
from memreader.embedders.local import LocalEmbedder
from memreader.embedders.model_files import resolve_model
from memreader.embedders.static_distill import build_static_model, static_folder
from memreader.errors import ConfigError, EmbeddingError

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

#: MemoryBank recall@5, day layout, no prefixes, measured 0.805 (local int8: 0.852); the floor
#: leaves room for other machines' floating point.
RECALL_AT_5_FLOOR = 0.75


@pytest.fixture(scope="module")
def static() -> Any:
    embedder = build_embedder(EmbedderConfig(backend="static"))
    assert isinstance(embedder, StaticEmbedder)
    return embedder


def _cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def test_built_through_the_registry(static: Any) -> None:
    assert static.name == "static:all-MiniLM-L6-v2"
    assert static.dimension == 384
    assert static.max_input_tokens >= 1_000_000
    smaller = build_embedder({"backend": "static", "config": {"dims": 128, "normalize": False}})
    assert smaller.name == "static:all-MiniLM-L6-v2:128d:unnormalized"
    assert smaller.dimension == 128
    text = "We talked about the garden and the tomatoes."
    full, cut = static.embed([text])[0], smaller.embed([text])[0]
    # The same principal axes, fewer of them.
    assert _cosine(full[:128], cut) == pytest.approx(1.0, abs=1e-5)


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="dims"):
        build_embedder({"backend": "static", "config": {"dims": 385}})
    with pytest.raises(ConfigError, match="dimension"):
        build_embedder({"backend": "static", "config": {"dimension": 10}})
    with pytest.raises(ConfigError, match="dims"):
        build_embedder({"backend": "static", "config": {"dims": 0}})


def test_vectors_are_finite_unit_vectors(static: Any) -> None:
    texts = [
        "user: I went hiking in the Alps with my sister last weekend.",
        "assistant: That sounds wonderful! Did you stay in a mountain hut?",
        "Meeting moved to 3pm; bring the Q3 numbers.",
        "tea and biscuits " * 2000,
        "mixed 中文 and English ☕ text",
    ]
    vectors = np.asarray(static.embed(texts))
    assert vectors.shape == (len(texts), 384)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_and_unknown_texts_give_zero_vectors(static: Any) -> None:
    # "a" * 101 is one word too long for WordPiece: [UNK], which has no vector.
    vectors = static.embed(["", "   ", "\n", "☕☕", "a" * 101, "tea"])
    for vector in vectors[:5]:
        assert vector == [0.0] * 384
    assert np.linalg.norm(vectors[5]) == pytest.approx(1.0, abs=1e-5)
    assert static.embed_fragments([["", ""], [""]]) == [[0.0] * 384, [0.0] * 384]
    assert static.embed([]) == []


def test_paraphrase_is_closer_than_an_unrelated_text(static: Any) -> None:
    cases = [
        (
            "I adopted a puppy last week and we go for long walks every morning.",
            "Last week I got a new dog, and each morning we walk together for ages.",
            "The quarterly budget report is due to the finance team on Friday.",
        ),
        (
            "My flight to Lisbon was delayed for three hours because of a storm.",
            "Bad weather held up my plane to Portugal by three hours.",
            "I have been learning to bake sourdough bread at home.",
        ),
        (
            "The doctor told me to cut down on coffee and sleep more.",
            "My physician advised less caffeine and more rest.",
            "We painted the kitchen walls a pale shade of green.",
        ),
    ]
    for query, paraphrase, unrelated in cases:
        q, p, u = static.embed([query, paraphrase, unrelated])
        assert _cosine(q, p) > _cosine(q, u) + 0.05, (query, _cosine(q, p), _cosine(q, u))


def test_embed_fragments_is_the_joined_text(static: Any) -> None:
    parts = ["user: I like green tea.\n", "assistant: Me too, with jasmine.\n", "user: Nice!"]
    (by_parts,) = static.embed_fragments([parts])
    (joined,) = static.embed(["".join(parts)])
    np.testing.assert_allclose(by_parts, joined, atol=1e-6)
    with pytest.raises(TypeError):
        static.embed_fragments(["not a list of parts"])


def test_unreadable_share(static: Any) -> None:
    assert static.unreadable_share("I like green tea, naïve café.") == 0.0
    assert static.unreadable_share("我喜欢喝绿茶") == pytest.approx(1.0)
    text = "user: 我喜欢喝绿茶 (green tea)"
    encoding = static.tokenizer.encode(text, add_special_tokens=False)
    spans = unknown_spans(encoding, static._unknown_id)
    assert static.unreadable_share(text) == unreadable_share(
        text, unknown_spans=spans, scripts=LATIN
    )
    assert static.scripts == LATIN  # a custom model_path: None (not known, never checked)


def test_distillation_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Load the fp32 session from the user cache first (building it there if needed): the
    # temporary caches then hold only the static files.
    LocalEmbedder(LocalEmbedderConfig(precision="fp32", normalize=False))
    built: list[Path] = []
    for name in ("a", "b"):
        monkeypatch.setenv("MEMREADER_CACHE_DIR", str(tmp_path / name))
        built.append(build_static_model(tokens=3000))
    first, second = (path.read_bytes() for path in built)
    assert built[0] != built[1] and first == second
    assert built[0].name == "vectors-first3000.npy"
    manifest = json.loads((built[0].parent / "manifest.json").read_text())
    assert set(manifest["sha256"]) == {"vectors-first3000.npy"}
    vectors = np.load(built[0])
    assert vectors.dtype == np.float32 and vectors.shape == (30522, 384)
    assert not vectors[3000:].any()  # tokens past the limit
    assert not vectors[[0, 100, 101, 102, 103, 1, 500]].any()  # special and [unused] tokens
    assert np.linalg.norm(vectors[1000:3000], axis=1).min() > 0
    # Present and intact: kept, not distilled again.
    mtime = built[1].stat().st_mtime_ns
    assert build_static_model(tokens=3000) == built[1]
    assert built[1].stat().st_mtime_ns == mtime


def test_missing_and_corrupt_files_are_clear_errors(
    static: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = static_folder(*resolve_model(None))
    assert (source / "vectors.npy").is_file()
    monkeypatch.setenv("MEMREADER_CACHE_DIR", str(tmp_path))
    with pytest.raises(EmbeddingError, match=r"missing.*memreader models build --static"):
        StaticEmbedder(StaticEmbedderConfig(auto_build=False))
    target = static_folder(*resolve_model(None))
    shutil.copytree(source, target)
    assert StaticEmbedder(StaticEmbedderConfig(auto_build=False)).embed(["tea"])
    path = target / "vectors.npy"
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match=r"corrupt.*memreader models build --static --force"):
        StaticEmbedder(StaticEmbedderConfig(auto_build=True))
    (target / "manifest.json").unlink()
    with pytest.raises(EmbeddingError, match="missing"):
        StaticEmbedder(StaticEmbedderConfig(auto_build=False))


def test_memorybank_recall_floor() -> None:
    spec = importlib.util.spec_from_file_location("retrieval", ROOT / "benchmarks" / "retrieval.py")
    assert spec is not None and spec.loader is not None
    retrieval = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(retrieval)
    row = retrieval.memorybank_recall({"backend": "static"}, layout="day", embed_prefixes=False)
    assert row["embedder"] == "static:all-MiniLM-L6-v2"
    assert row["recall@5"] >= RECALL_AT_5_FLOOR, row
