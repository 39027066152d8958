"""Tests of memreader.embedders: config validation, split-and-pool, cache, and the three backends.

The OpenAI-compatible and Ollama backends talk to a real HTTP server on 127.0.0.1 (stdlib
``ThreadingHTTPServer``) through their official clients; the local backend loads the bundled
all-MiniLM-L6-v2 once per module (tests marked ``slow``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.embedders import (
    EMBEDDERS,
    CachedEmbedder,
    Embedder,
    EmbedderConfig,
    EmbeddingCache,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    OpenAIEmbedderConfig,
    PoolingEmbedder,
    build_embedder,
    cache_key,
    split_by_tokens,
    weighted_mean,
)
from memreader.errors import ConfigError, EmbeddingError
from memreader.windowing.tokens import get_tokenizer, token_cuts

API_KEY = "sk-test-SECRET-0123456789"
DIM = 12


def count_cl100k(text: str) -> int:
    """cl100k tokens of ``text``, as the remote embedders count them."""
    return get_tokenizer().count(text)


# -- a real HTTP server speaking the OpenAI and Ollama embedding APIs -----------------------------


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic unit vector derived from the text's sha256."""
    raw = b""
    counter = 0
    while len(raw) < dim:
        raw += hashlib.sha256(f"{counter}\0{text}".encode("utf-8", "surrogatepass")).digest()
        counter += 1
    vector = [b - 127.5 for b in raw[:dim]]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


class FakeEmbeddingServer:
    """Serves ``POST /v1/embeddings`` and ``POST /api/embed``; records every request.

    ``failures`` is a queue of ``(status, json_body)`` answers given before normal ones;
    ``shuffle`` returns OpenAI data in a shuffled index order; ``drop_one`` returns one vector
    too few.
    """

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.requests: list[dict[str, Any]] = []
        self.failures: list[tuple[int, dict[str, Any]]] = []
        self.shuffle = False
        self.drop_one = False
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    )
                    failure = server.failures.pop(0) if server.failures else None
                if failure is not None:
                    self._send(failure[0], failure[1], {"retry-after-ms": "1"})
                elif self.path == "/v1/embeddings":
                    self._send(200, server.openai_answer(body))
                elif self.path == "/api/embed":
                    self._send(200, server.ollama_answer(body))
                else:
                    self._send(404, {"error": f"no route {self.path}"})

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def inputs(self) -> list[list[str]]:
        """The input lists of the recorded requests, in order."""
        return [request["body"]["input"] for request in self.requests]

    def openai_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        dim = body.get("dimensions") or self.dim
        inputs = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dim)}
            for i, text in enumerate(inputs)
        ]
        if self.shuffle:
            random.Random(len(inputs)).shuffle(data)
        if self.drop_one:
            data = data[:-1]
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }

    def ollama_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [fake_vector(text, self.dim) for text in inputs]
        if self.drop_one:
            vectors = vectors[:-1]
        return {"model": body["model"], "embeddings": vectors}


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    fake = FakeEmbeddingServer()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.httpd.shutdown()
        fake.httpd.server_close()
        fake.thread.join(timeout=5)


def openai_embedder(server: FakeEmbeddingServer, **overrides: Any) -> OpenAIEmbedder:
    config: dict[str, Any] = {
        "model": "fake-embed",
        "base_url": f"{server.url}/v1",
        "api_key": API_KEY,
        "max_retries": 0,
        "backoff_base": 0.01,
        "timeout": 5,
    }
    config.update(overrides)
    embedder = build_embedder(EmbedderConfig(backend="openai", config=config))
    assert isinstance(embedder, OpenAIEmbedder)
    return embedder


def ollama_embedder(server: FakeEmbeddingServer, **overrides: Any) -> OllamaEmbedder:
    config: dict[str, Any] = {
        "model": "fake-embed",
        "host": server.url,
        "max_retries": 0,
        "backoff_base": 0.01,
    }
    config.update(overrides)
    embedder = build_embedder({"backend": "ollama", "config": config})
    assert isinstance(embedder, OllamaEmbedder)
    return embedder


def expected_pooled(pieces: Sequence[str], weights: Sequence[int]) -> list[float]:
    """Unit-length token-weighted mean of the server's vectors for ``pieces``, by hand."""
    vectors = [fake_vector(piece) for piece in pieces]
    total = sum(weights)
    mean = [
        sum(w * v[d] for w, v in zip(weights, vectors, strict=True)) / total for d in range(DIM)
    ]
    norm = math.sqrt(sum(x * x for x in mean))
    return [x / norm for x in mean]


LONG_MIXED = " ".join(
    f"Paragraph {i}: the naïve café served crème brûlée 🍮 and 日本語のテキスト {i * 7}."
    for i in range(12)
)


# -- config ---------------------------------------------------------------------------------------


def test_unknown_backend_lists_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        build_embedder(EmbedderConfig(backend="nope"))
    message = str(info.value)
    assert "'nope'" in message
    for known in ("local", "openai", "ollama"):
        assert known in message and known in EMBEDDERS


def test_unknown_field_names_backend_and_field() -> None:
    with pytest.raises(ConfigError) as info:
        build_embedder({"backend": "openai", "config": {"model": "m", "modle": "x"}})
    assert "'openai'" in str(info.value) and "modle" in str(info.value)


@pytest.mark.parametrize(
    ("backend", "config", "field"),
    [
        ("openai", {"model": "m", "batch_size": "many"}, "batch_size"),
        ("openai", {"model": "m", "timeout": 0}, "timeout"),
        ("openai", {}, "model"),
        ("ollama", {"max_input_tokens": 2}, "max_input_tokens"),
        ("local", {"normalize": "maybe"}, "normalize"),
    ],
)
def test_wrong_values_raise_config_error(backend: str, config: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_embedder({"backend": backend, "config": config})
    assert f"'{backend}'" in str(info.value) and field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_top_level_config_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="backnd"):
        build_embedder({"backnd": "openai"})


def test_config_errors_never_echo_values() -> None:
    with pytest.raises(ConfigError) as info:
        build_embedder({"backend": "openai", "config": {"model": "m", "apikey": API_KEY}})
    assert API_KEY not in str(info.value)
    # Nothing chained either: a traceback must not print the secret through the cause.
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_secrets_stay_out_of_repr_and_str() -> None:
    config = OpenAIEmbedderConfig(
        model="m", api_key=API_KEY, extra_headers={"Authorization": "Bearer hdr-SECRET"}
    )
    for text in (repr(config), str(config), repr(EmbedderConfig(backend="openai"))):
        assert API_KEY not in text and "hdr-SECRET" not in text
    assert "Authorization" in repr(config)
    assert config.api_key is not None and config.api_key.get_secret_value() == API_KEY
    assert API_KEY not in config.model_dump_json()


def test_embedder_config_hides_secrets_but_backends_get_them(server: FakeEmbeddingServer) -> None:
    cfg = EmbedderConfig(
        backend="openai",
        config={
            "model": "fake-embed",
            "base_url": f"{server.url}/v1",
            "api_key": API_KEY,
            "max_input_tokens": 100,
            "extra_headers": {"Authorization": "Bearer hdr-SECRET"},
        },
    )
    for text in (repr(cfg), str(cfg), cfg.model_dump_json()):
        assert API_KEY not in text and "hdr-SECRET" not in text
        assert "fake-embed" in text and "100" in text  # only secrets are hidden
    embedder = build_embedder(cfg)
    embedder.embed(["x"])
    assert server.requests[0]["headers"]["authorization"] == "Bearer hdr-SECRET"
    assert API_KEY not in repr(embedder)


def test_importing_embedders_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys, memreader.embedders\n"
        "names = ('torch', 'sentence_transformers', 'transformers')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- splitting and pooling ------------------------------------------------------------------------


def test_weighted_mean_by_hand() -> None:
    mean = weighted_mean([[1.0, 0.0], [0.0, 1.0]], [3, 1], normalize=False)
    assert mean == pytest.approx([0.75, 0.25])
    unit = weighted_mean([[1.0, 0.0], [0.0, 1.0]], [3, 1], normalize=True)
    assert unit == pytest.approx([0.75 / math.hypot(0.75, 0.25), 0.25 / math.hypot(0.75, 0.25)])


def _check_pieces(text: str, pieces: Sequence[Any], budget: int) -> None:
    assert "".join(piece.text for piece in pieces) == text
    position = 0
    for piece in pieces:
        assert piece.start == position and text[piece.start : piece.end] == piece.text
        assert piece.tokens <= budget
        assert piece.text or len(pieces) == 1
        position = piece.end
    assert position == len(text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=120), budget=st.integers(min_value=4, max_value=12))
def test_cl100k_split_gives_exact_substrings_within_budget(text: str, budget: int) -> None:
    pieces = split_by_tokens(text, budget, token_cuts, count_cl100k)
    _check_pieces(text, pieces, budget)


def test_cl100k_split_never_cuts_inside_characters() -> None:
    text = "🍮" * 40 + "日本語" * 30
    pieces = split_by_tokens(text, 5, token_cuts, count_cl100k)
    assert len(pieces) > 10
    _check_pieces(text, pieces, 5)
    for piece in pieces:
        assert piece.text.encode("utf-8").decode("utf-8") == piece.text


def test_split_prefers_whitespace() -> None:
    text = " ".join(["alpha", "beta", "gamma", "delta"] * 30)
    pieces = split_by_tokens(text, 10, token_cuts, count_cl100k)
    for piece in pieces[:-1]:
        assert text[piece.end] == " " or text[piece.end - 1] == " "


# -- cache ----------------------------------------------------------------------------------------


def test_cache_is_lru_bounded_and_copies() -> None:
    cache = EmbeddingCache(max_entries=2)
    cache.put("a", [1.0])
    cache.put("b", [2.0])
    assert cache.get("a") == [1.0]  # "a" is now the most recent
    cache.put("c", [3.0])
    assert cache.get("b") is None and cache.get("a") == [1.0] and len(cache) == 2
    got = cache.get("c")
    assert got is not None
    got.append(99.0)
    assert cache.get("c") == [3.0]
    with pytest.raises(ConfigError):
        EmbeddingCache(max_entries=0)


def test_cache_key_is_namespaced_by_embedder() -> None:
    assert cache_key("a:m", "text") != cache_key("b:m", "text")
    assert cache_key("a:m", "text") == hashlib.sha256(b"a:m\0text").hexdigest()


def test_cache_is_thread_safe() -> None:
    cache = EmbeddingCache(max_entries=50)

    def work(seed: int) -> None:
        for i in range(500):
            key = str((seed * 7 + i) % 80)
            cache.put(key, [float(i)])
            cache.get_many([key, str(i % 80)])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 50


# -- failures of one batch are typed and name it ----------------------------------------------


class ScriptedPooling(PoolingEmbedder):
    """A PoolingEmbedder whose batches answer with ``reply(texts)`` (it may raise)."""

    config_class = OpenAIEmbedderConfig

    def __init__(self, reply: Any) -> None:
        super().__init__(name="scripted", max_input_tokens=50, batch_size=2, normalize=False)
        self.reply = reply

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return [None] * len(text.split())

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        result: Sequence[Sequence[float]] = self.reply(texts)
        return result


class PluginEmbedder:
    """A third-party embedder (no base class) that answers ``reply(texts)``."""

    name = "plugin"
    dimension = 2
    max_input_tokens = 100
    batch_size = 2

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def count_tokens(self, text: str) -> int:
        return 1

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        result: list[list[float]] = self.reply(list(texts))
        return result


def _raise(exc: BaseException) -> Any:
    def reply(texts: list[str]) -> Any:
        raise exc

    return reply


BAD_BATCHES: list[tuple[Any, str]] = [
    (_raise(KeyError("data")), "failed: KeyError: 'data'"),
    (_raise(RuntimeError("CUDA out of memory")), "failed: RuntimeError: CUDA out of memory"),
    (lambda texts: [[1.0, 2.0]], "1 vectors for 2 texts"),
    (lambda texts: [[1.0, 2.0], "ab"], "vector 1 is not a list of numbers"),
    (lambda texts: [[1.0, 2.0], [1.0, float("nan")]], "vector 1 is empty or not finite"),
    (lambda texts: [[1.0, 2.0], None], "vector 1 is not a list of numbers"),
]


@pytest.mark.parametrize(("reply", "problem"), BAD_BATCHES)
def test_pooling_embedder_batch_failure_names_the_batch(reply: Any, problem: str) -> None:
    texts = ["first fine text", "x" * 100 + " y", "third"]
    embedder = ScriptedPooling(lambda batch: [[1.0, 0.0]] * len(batch))
    assert len(embedder.embed(texts)) == 3
    embedder.reply = reply
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(texts)
    message = str(info.value)
    assert problem in message and message.startswith("scripted: ")
    assert "a batch of 2 texts, the first (15 characters): 'first fine text'" in message


@pytest.mark.parametrize(("reply", "problem"), BAD_BATCHES)
def test_cached_embedder_batch_failure_names_the_batch_and_caches_nothing(
    reply: Any, problem: str
) -> None:
    plugin = PluginEmbedder(reply)
    cached = CachedEmbedder(plugin)
    long_text = "a long text " * 10
    with pytest.raises(EmbeddingError) as info:
        cached.embed([long_text, "two", long_text])
    message = str(info.value)
    assert problem in message and message.startswith("plugin: ")
    assert (
        "a batch of 2 texts, the first (120 characters): 'a long text a long text a long text a "
        in message
    )
    assert len(cached.cache) == 0
    plugin.reply = lambda texts: [[0.6, 0.8] for _ in texts]
    assert cached.embed(["two"]) == [[0.6, 0.8]] and len(cached.cache) == 1


def test_cached_embedder_wrong_types_from_a_plugin_are_typed() -> None:
    for answer in ("not vectors", None, 42, [[1.0], [1.0, 2.0]]):
        cached = CachedEmbedder(PluginEmbedder(lambda texts, a=answer: a))
        with pytest.raises(EmbeddingError, match=r"plugin: .*\(a batch of 2 texts"):
            cached.embed(["one", "two"])


# -- OpenAI-compatible ----------------------------------------------------------------------------


def test_openai_batches_and_sends_the_key(server: FakeEmbeddingServer) -> None:
    embedder = openai_embedder(server, batch_size=3)
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder.embed(texts)
    assert [len(batch) for batch in server.inputs()] == [3, 3, 1]
    assert vectors == [pytest.approx(fake_vector(text)) for text in texts]
    first = server.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["body"]["model"] == "fake-embed"
    assert first["body"]["encoding_format"] == "float"
    assert "dimensions" not in first["body"]
    assert first["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert embedder.dimension == DIM and embedder.name == "openai:fake-embed"
    assert len(server.requests) == 3  # dimension learnt, no probe


def test_openai_restores_order_of_shuffled_answers(server: FakeEmbeddingServer) -> None:
    server.shuffle = True
    embedder = openai_embedder(server, batch_size=16)
    texts = [f"sentence {i}" for i in range(10)]
    assert embedder.embed(texts) == [pytest.approx(fake_vector(text)) for text in texts]


def test_openai_dimensions_and_headers(server: FakeEmbeddingServer) -> None:
    embedder = openai_embedder(server, dimensions=5, extra_headers={"X-Tenant": "t1"})
    assert embedder.dimension == 5 and not server.requests  # configured: no probe
    assert isinstance(embedder, Embedder)
    (vector,) = embedder.embed(["hello"])
    assert len(vector) == 5 and embedder.name == "openai:fake-embed:5d"
    assert server.requests[0]["body"]["dimensions"] == 5
    assert server.requests[0]["headers"]["x-tenant"] == "t1"


def test_openai_dimension_probe(server: FakeEmbeddingServer) -> None:
    embedder = openai_embedder(server)
    assert embedder.dimension == DIM
    assert len(server.requests) == 1


def test_cache_avoids_requests_and_dedups(server: FakeEmbeddingServer) -> None:
    cached = CachedEmbedder(openai_embedder(server, batch_size=2), EmbeddingCache(100))
    first = cached.embed(["a", "b", "a", "c", "b"])
    assert server.inputs() == [["a", "b"], ["c"]]
    assert (cached.hits, cached.misses) == (0, 3)
    second = cached.embed(["c", "a", "d", "a"])
    assert server.inputs()[2:] == [["d"]]
    assert (cached.hits, cached.misses) == (2, 4)
    assert first[0] == first[2] == second[1] == second[3] == pytest.approx(fake_vector("a"))
    assert second[2] == pytest.approx(fake_vector("d"))
    assert cached.embed(["a", "b", "c", "d"]) == [
        pytest.approx(fake_vector(t)) for t in ["a", "b", "c", "d"]
    ]
    assert len(server.requests) == 3
    assert cached.name == "openai:fake-embed" and cached.dimension == DIM


def test_openai_long_text_is_pooled_not_truncated(server: FakeEmbeddingServer) -> None:
    embedder = openai_embedder(server, max_input_tokens=32, batch_size=64)
    assert count_cl100k(LONG_MIXED) > 5 * 32
    short = "a short one"
    vectors = embedder.embed([short, LONG_MIXED])
    (sent,) = server.inputs()
    assert sent[0] == short
    pieces = sent[1:]
    assert len(pieces) > 5
    assert "".join(pieces) == LONG_MIXED
    assert all(count_cl100k(piece) <= 32 and "\ufffd" not in piece for piece in pieces)
    weights = [count_cl100k(piece) for piece in pieces]
    assert vectors[0] == pytest.approx(fake_vector(short))
    assert vectors[1] == pytest.approx(expected_pooled(pieces, weights), abs=1e-9)
    assert vectors[1] != pytest.approx(fake_vector(pieces[0]), abs=1e-3)
    assert math.isclose(math.hypot(*vectors[1]), 1.0)


@pytest.mark.parametrize("status", [400, 500])
def test_openai_http_errors_name_url_not_key(server: FakeEmbeddingServer, status: int) -> None:
    server.failures.append((status, {"error": {"message": f"boom {API_KEY}", "type": "x"}}))
    embedder = openai_embedder(server)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    message = str(info.value)
    assert server.url in message and "fake-embed" in message and str(status) in message
    assert API_KEY not in message
    # The SDK's error quotes the server's message, key and all: it is not kept as the cause
    # (a traceback would print it), only logged with secrets scrubbed.
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_openai_retries_server_errors(server: FakeEmbeddingServer) -> None:
    server.failures.append((503, {"error": {"message": "busy"}}))
    embedder = openai_embedder(server, max_retries=1)
    assert embedder.embed(["x"]) == [pytest.approx(fake_vector("x"))]
    assert len(server.requests) == 2


def test_openai_wrong_vector_count_is_an_error(server: FakeEmbeddingServer) -> None:
    server.drop_one = True
    with pytest.raises(EmbeddingError, match="2 inputs"):
        openai_embedder(server).embed(["x", "y"])


def test_openai_unreachable_server() -> None:
    fake = FakeEmbeddingServer()
    fake.httpd.server_close()  # bound once, now closed: nothing listens on that port
    with pytest.raises(EmbeddingError, match=r"127\.0\.0\.1"):
        openai_embedder(fake).embed(["x"])


def test_embed_rejects_a_bare_string(server: FakeEmbeddingServer) -> None:
    with pytest.raises(TypeError):
        openai_embedder(server).embed("not a list")
    assert openai_embedder(server).embed([]) == []
    assert not server.requests


# -- Ollama ---------------------------------------------------------------------------------------


def test_ollama_embeds_in_batches(server: FakeEmbeddingServer) -> None:
    embedder = ollama_embedder(server, batch_size=2)
    texts = ["one", "two", "three"]
    assert embedder.embed(texts) == [pytest.approx(fake_vector(text)) for text in texts]
    assert server.inputs() == [["one", "two"], ["three"]]
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/api/embed"
    assert body["model"] == "fake-embed" and body["truncate"] is False
    assert embedder.dimension == DIM and embedder.name == "ollama:fake-embed"


def test_ollama_long_text_is_pooled(server: FakeEmbeddingServer) -> None:
    embedder = ollama_embedder(server, max_input_tokens=40)
    (vector,) = embedder.embed([LONG_MIXED])
    (pieces,) = server.inputs()
    assert "".join(pieces) == LONG_MIXED and len(pieces) > 3
    weights = [count_cl100k(piece) for piece in pieces]
    assert vector == pytest.approx(expected_pooled(pieces, weights), abs=1e-9)


def test_ollama_errors(server: FakeEmbeddingServer) -> None:
    server.failures.append((404, {"error": "model 'fake-embed' not found"}))
    with pytest.raises(EmbeddingError) as info:
        ollama_embedder(server).embed(["x"])
    assert "not found" in str(info.value) and server.url in str(info.value)
    assert "404" in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None
    server.drop_one = True
    with pytest.raises(EmbeddingError, match="1 vectors for 2 inputs"):
        ollama_embedder(server).embed(["x", "y"])


def test_ollama_retries_server_errors(server: FakeEmbeddingServer) -> None:
    server.failures.append((500, {"error": "loading model"}))
    embedder = ollama_embedder(server, max_retries=1)
    assert embedder.embed(["x"]) == [pytest.approx(fake_vector("x"))]
    assert len(server.requests) == 2
    server.failures.extend([(500, {"error": "down"})] * 2)
    with pytest.raises(EmbeddingError, match="down"):
        embedder.embed(["y"])


def test_ollama_unreachable_server() -> None:
    fake = FakeEmbeddingServer()
    fake.httpd.server_close()
    with pytest.raises(EmbeddingError, match=r"127\.0\.0\.1"):
        ollama_embedder(fake).embed(["x"])


# -- the local model ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    """The default embedder: the bundled model in int8 on ONNX Runtime."""
    embedder = build_embedder(EmbedderConfig())
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def _new_local(**config: Any) -> LocalEmbedder:
    """A new local embedder (its own memory of recent pieces; the ONNX session is shared)."""
    embedder = build_embedder({"backend": "local", "config": config})
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.hypot(*a) * math.hypot(*b))


CATS = (
    "The cat sat on the mat by the window and watched the birds in the garden. "
    "Cats sleep most of the day, groom their fur, and chase small toys at night. "
)
TAXES = (
    "Quarterly tax filings are due in April, and late payments incur penalties and interest. "
    "Accountants reconcile ledgers, deductions and invoices before submitting the returns. "
)


@pytest.mark.slow
def test_local_basics(local: LocalEmbedder) -> None:
    assert local.dimension == 384 and local.max_input_tokens == 256
    assert local.name == "local:all-MiniLM-L6-v2:int8" and isinstance(local, Embedder)
    assert local.config.precision == "int8" and local.piece_budget == 254
    assert local.count_tokens("hello world") == 2
    vectors = local.embed(["hello world", "", "Grüße aus Köln 🙂"])
    assert len(vectors) == 3
    for vector in vectors:
        assert len(vector) == 384 and math.isclose(math.hypot(*vector), 1.0, rel_tol=1e-5)


@pytest.mark.slow
def test_local_model_is_loaded_once(local: LocalEmbedder) -> None:
    # One ONNX Runtime session per model file and thread count, shared by every embedder.
    again = _new_local(batch_size=4)
    assert again._session is local._session
    fp32 = _new_local(precision="fp32")
    assert fp32._session is not local._session
    assert _new_local(precision="fp32", normalize=False)._session is fp32._session


@pytest.mark.slow
def test_local_shared_model_is_safe_across_threads(local: LocalEmbedder) -> None:
    texts = [f"thread test sentence number {i}" for i in range(6)] + [CATS * 4]
    # New embedders each time: an embedder reuses the vectors of pieces it embedded lately,
    # and every thread must run the shared session. The same batches give the same vectors.
    expected = _new_local(batch_size=2).embed(texts)
    results: dict[int, list[list[float]]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            other = _new_local(batch_size=2)
            results[n] = other.embed(texts)
            other.count_tokens(texts[n])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for vectors in results.values():
        for got, want in zip(vectors, expected, strict=True):
            assert got == pytest.approx(want, abs=1e-5)


@pytest.mark.slow
def test_local_max_input_tokens_cannot_exceed_the_model(local: LocalEmbedder) -> None:
    with pytest.raises(ConfigError, match="max_input_tokens"):
        build_embedder({"backend": "local", "config": {"max_input_tokens": 512}})


@pytest.mark.slow
def test_local_paraphrase_is_closer_than_unrelated(local: LocalEmbedder) -> None:
    cat, rug, tax = local.embed(
        [
            "The cat sat on the mat",
            "A cat was sitting on the rug",
            "Quarterly tax filings are due in April",
        ]
    )
    assert _cosine(cat, rug) > _cosine(cat, tax) + 0.3


@pytest.mark.slow
def test_local_long_text_is_pooled_not_truncated() -> None:
    # fp32: its vectors do not depend on what else is in the batch (int8's do, a little).
    local = _new_local(precision="fp32")
    long = CATS * 7 + TAXES * 7
    assert local.count_tokens(long) > 256 + 200
    pieces = local.split_text(long)
    assert len(pieces) == 2
    _check_pieces(long, pieces, 254)
    assert [local.count_tokens(piece.text) for piece in pieces] == [p.tokens for p in pieces]
    piece_vectors = _new_local(precision="fp32").embed([piece.text for piece in pieces])
    expected = weighted_mean(piece_vectors, [piece.tokens for piece in pieces], normalize=True)
    (pooled,) = local.embed([long])
    assert pooled == pytest.approx(expected, abs=1e-5)
    # What silent truncation would give (sentence-transformers keeps [CLS], the first 254
    # tokens and [SEP]): the model reads little more than the cats.
    ids = local.tokenizer.encode(long).ids
    (truncated,) = local._embed_ids([[*ids[:255], ids[-1]]]).tolist()
    truncated = weighted_mean([truncated], [1], normalize=True)
    cut = local._token_cuts(long)[254]
    assert cut is not None
    assert truncated == pytest.approx(_new_local(precision="fp32").embed([long[:cut]])[0], abs=1e-5)
    assert _cosine(pooled, truncated) < 0.95
    (taxes,) = local.embed([TAXES])
    assert _cosine(pooled, taxes) > _cosine(truncated, taxes) + 0.1


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=80), budget=st.integers(min_value=3, max_value=10))
def test_local_split_gives_exact_substrings_within_budget(
    local: LocalEmbedder, text: str, budget: int
) -> None:
    pieces = split_by_tokens(text, budget, local._token_cuts, local.count_tokens)
    _check_pieces(text, pieces, budget)
