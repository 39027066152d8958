"""A scripted LLM server for tests: OpenAI chat completions and Ollama chat over real HTTP.

It runs a stdlib :class:`~http.server.ThreadingHTTPServer` on ``127.0.0.1`` (ephemeral port) in a
background thread and answers

* ``POST /v1/chat/completions`` (OpenAI-compatible; point ``base_url`` at :attr:`url`),
* ``POST /api/chat`` (Ollama, non-streaming; point ``host`` at :attr:`ollama_host`),
* ``POST /v1/embeddings`` and ``POST /api/embed`` (deterministic vectors of
  :data:`EMBED_DIM` floats per input text, see :func:`fake_vector`),
* ``POST /v1/audio/transcriptions`` (multipart; the fields are on
  :attr:`RecordedRequest.form`; by default ``{"text": "<transcript of N bytes>"}``)

from a script: a queue of :class:`Reply` objects consumed one per request, in arrival order.
When the queue is empty, :attr:`LLMTestServer.responder` (a function of the request) answers;
by default it returns ``{}`` as the model's content in the right API's shape.

Every request is recorded (:attr:`requests`), and the server tracks requests in flight and
their maximum (:attr:`max_in_flight`), so tests can check concurrency limits. :attr:`latency`
delays every answer.

Faults: a :class:`Reply` can send any bytes with any content type (``content_type``), wait
before answering (``delay``), send its headers and body one byte at a time (``slow_headers``,
``trickle``), send a body that never ends (``endless``) or reset the connection without an
answer (``reset``).

Example::

    def test_something(llm_server):
        llm_server.script([
            Reply(status=500, body={"error": {"message": "boom"}}),
            Reply(body=openai_completion('{"ok": true}', usage=(10, 2))),
        ])
        cfg = LLMConfig(backend="openai", model="m", base_url=llm_server.url)
        ...
        assert len(llm_server.requests) == 2
        assert llm_server.requests[-1].json["model"] == "m"

Use the ``llm_server`` fixture (``from tests.llm_server import llm_server`` in a test module or
``conftest.py``), or ``with LLMTestServer() as server:``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeVar

import pytest

from tests.background_server import BackgroundServer, OwnedServer

__all__ = [
    "EMBED_DIM",
    "SLOW_FAULTS",
    "TRANSPORT_FAULTS",
    "FormPart",
    "LLMTestServer",
    "RecordedRequest",
    "Reply",
    "default_responder",
    "fake_vector",
    "fault",
    "finishes_within",
    "llm_server",
    "ollama_chat",
    "ollama_embed",
    "openai_completion",
    "openai_embeddings",
    "openai_error",
    "parse_multipart",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"
OPENAI_EMBED_PATH = "/v1/embeddings"
OLLAMA_EMBED_PATH = "/api/embed"
OPENAI_AUDIO_PATH = "/v1/audio/transcriptions"
#: Length of the vectors the embedding routes return.
EMBED_DIM = 8


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        status: the HTTP status code.
        body: a dict/list (sent as JSON), a str (sent as is), bytes (sent as is) or ``None``
            (empty body).
        headers: extra response headers (e.g. ``{"Retry-After": "0"}``).
        delay: seconds to wait before answering (use it to trigger client timeouts).
        content_type: the ``Content-Type`` to send instead of the one the body implies (e.g.
            ``application/json`` on bytes that are not JSON).
        trickle: seconds between the bytes of the body (0: send it at once).
        slow_headers: send the status line and headers one byte per ``trickle`` too.
        endless: after the body, send a space every ``trickle`` seconds (at least 1 ms) until
            the client goes away or the server stops; ``Content-Length`` promises 1 GB.
        reset: close the connection with a TCP reset instead of answering.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str | None = None
    trickle: float = 0.0
    slow_headers: bool = False
    endless: bool = False
    reset: bool = False

    def encoded(self) -> tuple[bytes, str]:
        """The body bytes and their content type."""
        payload, implied = self._payload()
        return payload, self.content_type or implied

    def _payload(self) -> tuple[bytes, str]:
        if self.body is None:
            return b"", "application/json"
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body), "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode("utf-8"), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode("utf-8"), "application/json"


@dataclass(frozen=True)
class FormPart:
    """One field of a ``multipart/form-data`` body (``filename`` is set for a file)."""

    name: str
    value: bytes
    filename: str | None = None
    content_type: str | None = None

    @property
    def text(self) -> str:
        """The value as UTF-8 text."""
        return self.value.decode("utf-8", "replace")


def parse_multipart(body: bytes, content_type: str) -> dict[str, FormPart]:
    """The fields of a ``multipart/form-data`` body, by name (just enough for tests: no nested
    parts, no transfer encodings). Empty if ``content_type`` is not multipart."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return {}
    boundary = ""
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        return {}
    parts: dict[str, FormPart] = {}
    delimiter = b"--" + boundary.encode("latin-1")
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, value = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        value = value.removesuffix(b"\r\n")
        headers: dict[str, str] = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, _, header_value = line.partition(":")
            headers[name.strip().lower()] = header_value.strip()
        disposition: dict[str, str] = {}
        for item in headers.get("content-disposition", "").split(";")[1:]:
            key, _, raw = item.strip().partition("=")
            disposition[key.lower()] = raw.strip().strip('"')
        field_name = disposition.get("name", "")
        parts[field_name] = FormPart(
            field_name, value, disposition.get("filename"), headers.get("content-type")
        )
    return parts


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    @property
    def json(self) -> Any:
        """The body decoded as JSON (``None`` if it is not JSON)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def form(self) -> dict[str, FormPart]:
        """The fields of a ``multipart/form-data`` body (empty for any other body)."""
        return parse_multipart(self.body, self.headers.get("content-type", ""))

    @property
    def api(self) -> str:
        """``"openai"``, ``"ollama"``, ``"openai_embed"``, ``"ollama_embed"``,
        ``"openai_audio"`` or ``"other"``."""
        if self.path.startswith(OPENAI_AUDIO_PATH):
            return "openai_audio"
        if self.path.startswith(OPENAI_PATH):
            return "openai"
        if self.path.startswith(OLLAMA_PATH):
            return "ollama"
        if self.path.startswith(OPENAI_EMBED_PATH):
            return "openai_embed"
        if self.path.startswith(OLLAMA_EMBED_PATH):
            return "ollama_embed"
        return "other"

    @property
    def inputs(self) -> list[str]:
        """The texts of an embedding request (empty if none)."""
        body = self.json
        value = body.get("input", []) if isinstance(body, dict) else []
        return [value] if isinstance(value, str) else list(value)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request (empty if none)."""
        body = self.json
        return list(body.get("messages", [])) if isinstance(body, dict) else []


# -- body builders ---------------------------------------------------------------------------


def openai_completion(
    content: str | None = "{}",
    *,
    tool_call: tuple[str, str] | None = None,
    usage: tuple[int, int] | None = (5, 5),
    finish_reason: str = "stop",
    model: str = "test-model",
    choices: bool = True,
) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` body.

    Args:
        content: the assistant message content.
        tool_call: ``(function name, arguments JSON string)`` for a tool-call answer.
        usage: ``(prompt_tokens, completion_tokens)``, or ``None`` for no usage field.
        finish_reason: ``"stop"``, ``"length"``, ``"tool_calls"``, ...
        model: the model name reported.
        choices: ``False`` for an answer with an empty ``choices`` list.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_call is not None:
        name, arguments = tool_call
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": (
            [{"index": 0, "message": message, "finish_reason": finish_reason}] if choices else []
        ),
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return body


def openai_error(message: str = "error", *, kind: str = "server_error") -> dict[str, Any]:
    """An OpenAI error body (send it with a 4xx/5xx status)."""
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}


def ollama_chat(
    content: str = "{}",
    *,
    prompt_eval_count: int | None = 5,
    eval_count: int | None = 5,
    done_reason: str = "stop",
    model: str = "test-model",
    tool_call: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An Ollama ``/api/chat`` non-streaming body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_call is not None:
        message["tool_calls"] = [{"function": {"name": tool_call[0], "arguments": tool_call[1]}}]
    body: dict[str, Any] = {
        "model": model,
        "created_at": "2024-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": done_reason,
    }
    if prompt_eval_count is not None:
        body["prompt_eval_count"] = prompt_eval_count
    if eval_count is not None:
        body["eval_count"] = eval_count
    return body


def fake_vector(text: str, dim: int = EMBED_DIM) -> list[float]:
    """A deterministic unit vector derived from the text's sha256."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    vector = [b - 127.5 for b in digest[:dim]]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def openai_embeddings(texts: list[str], model: str = "test-embed") -> dict[str, Any]:
    """An OpenAI ``/v1/embeddings`` body with :func:`fake_vector` of each text."""
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": fake_vector(text)}
            for i, text in enumerate(texts)
        ],
        "model": model,
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


def ollama_embed(texts: list[str], model: str = "test-embed") -> dict[str, Any]:
    """An Ollama ``/api/embed`` body with :func:`fake_vector` of each text."""
    return {"model": model, "embeddings": [fake_vector(text) for text in texts]}


def default_responder(request: RecordedRequest) -> Reply:
    """Answer ``{}`` (or the texts' vectors, or a transcript naming the audio's size) in the
    shape of the API called; 404 elsewhere."""
    if request.api == "openai":
        return Reply(body=openai_completion("{}"))
    if request.api == "ollama":
        return Reply(body=ollama_chat("{}"))
    if request.api == "openai_embed":
        return Reply(body=openai_embeddings(request.inputs))
    if request.api == "ollama_embed":
        return Reply(body=ollama_embed(request.inputs))
    if request.api == "openai_audio":
        audio = request.form.get("file")
        size = len(audio.value) if audio is not None else 0
        return Reply(body={"text": f"<transcript of {size} bytes>"})
    return Reply(status=404, body={"error": f"no route for {request.path}"})


# -- faults ----------------------------------------------------------------------------------

#: Replies that break the HTTP exchange or the body, whatever the API (see :func:`fault`).
TRANSPORT_FAULTS = (
    "not_json",
    "empty_body",
    "bad_utf8",
    "deep_json",
    "json_list",
    "json_string",
    "json_null",
    "html_200",
    "http_429",
    "http_500",
    "http_503_text",
    "http_400",
    "reset",
    "hang",
    "slow_headers",
    "trickle_body",
    "endless_body",
)
#: The faults that only a timeout ends.
SLOW_FAULTS = frozenset({"hang", "slow_headers", "trickle_body", "endless_body"})

_JSON = "application/json"


def fault(kind: str, *, stall: float = 30.0, trickle: float = 0.05) -> Reply:
    """The reply of one of :data:`TRANSPORT_FAULTS`.

    ``stall`` is how long ``hang`` waits before answering; ``trickle`` the seconds between the
    bytes of ``slow_headers``, ``trickle_body`` (a 500-byte JSON body) and ``endless_body``.
    Each byte arrives well within any read timeout, so only a deadline ends them.
    """
    replies: dict[str, Callable[[], Reply]] = {
        "not_json": lambda: Reply(body=b"this is not JSON", content_type=_JSON),
        "empty_body": lambda: Reply(body=b"", content_type=_JSON),
        "bad_utf8": lambda: Reply(body=b'{"model": "\xff\xfe\xfd"}', content_type=_JSON),
        "deep_json": lambda: Reply(body=b"[" * 100_000 + b"]" * 100_000, content_type=_JSON),
        "json_list": lambda: Reply(body=[1, 2, 3]),
        "json_string": lambda: Reply(body=b'"hello"', content_type=_JSON),
        "json_null": lambda: Reply(body=b"null", content_type=_JSON),
        "html_200": lambda: Reply(body=b"<html>proxy error</html>", content_type="text/html"),
        "http_429": lambda: Reply(
            status=429, body=openai_error("slow down"), headers={"Retry-After": "0"}
        ),
        "http_500": lambda: Reply(status=500, body=openai_error("boom")),
        "http_503_text": lambda: Reply(status=503, body="service unavailable"),
        "http_400": lambda: Reply(status=400, body=openai_error("bad request", kind="x")),
        "reset": lambda: Reply(reset=True),
        "hang": lambda: Reply(body={}, delay=stall),
        "slow_headers": lambda: Reply(body={}, trickle=trickle, slow_headers=True),
        "trickle_body": lambda: Reply(
            body=b'{"pad": "' + b"x" * 500 + b'"}', content_type=_JSON, trickle=trickle
        ),
        "endless_body": lambda: Reply(body=b"{", content_type=_JSON, endless=True, trickle=trickle),
    }
    if kind not in replies:
        raise ValueError(f"unknown fault {kind!r}; known: {', '.join(replies)}")
    return replies[kind]()


def finishes_within(seconds: float, call: Callable[[], _T]) -> _T:
    """``call()`` run on a daemon thread: its result or its exception, or a test failure if it
    has not finished within ``seconds`` (a hung call cannot hang the suite)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test thread, raised there
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="finishes-within", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the call did not finish within {seconds:g}s")
    if "error" in outcome:
        raise outcome["error"]
    result: _T = outcome["value"]
    return result


# -- the server ------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: OwnedServer

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        self.server.owner._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("llm test server: " + format, *args)


ReplyLike = Reply | dict[str, Any] | str | Callable[[RecordedRequest], Reply]


class LLMTestServer(BackgroundServer):
    """A scripted OpenAI/Ollama server (see the module docstring).

    Attributes:
        responder: answers requests when the script is empty; ``fn(request) -> Reply``.
        latency: seconds added before every answer (on top of a reply's own ``delay``).
        requests: every request received, in arrival order.
        in_flight: requests being handled right now.
        max_in_flight: the most requests handled at once since start or :meth:`reset`.
    """

    handler = _Handler

    def __init__(self, *, latency: float = 0.0) -> None:
        self.responder: Callable[[RecordedRequest], Reply] = default_responder
        self.latency = latency
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[ReplyLike] = deque()
        self._lock = threading.Lock()
        super().__init__()

    # -- lifecycle --

    # -- addresses --

    @property
    def ollama_host(self) -> str:
        """``http://127.0.0.1:PORT``: the ``host`` for an Ollama client."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the ``base_url`` for an OpenAI client."""
        return f"{self.ollama_host}/v1"

    # -- scripting --

    def script(self, replies: Iterable[ReplyLike]) -> LLMTestServer:
        """Queue answers for the next requests, one each, in order.

        An entry may be a :class:`Reply`, a dict (a 200 JSON body), a str (the *content* of a
        200 answer in the requested API's shape; for a transcription, ``{"text": str}``) or a
        function ``fn(request) -> Reply``.
        """
        with self._lock:
            self._script.extend(replies)
        return self

    def reply(self, reply: ReplyLike) -> LLMTestServer:
        """Queue one answer (see :meth:`script`)."""
        return self.script([reply])

    @property
    def pending(self) -> int:
        """Scripted answers not used yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget requests, the script and the in-flight maximum; restore the default responder."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self.max_in_flight = self.in_flight
            self.responder = default_responder
            self.latency = 0.0

    def bodies(self, api: str | None = None) -> list[Any]:
        """The JSON bodies of recorded requests (optionally only those of ``api``)."""
        with self._lock:
            return [r.json for r in self.requests if api is None or r.api == api]

    # -- handling --

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            entry: ReplyLike | None = self._script.popleft() if self._script else None
        if entry is None:
            return self.responder(request)
        if isinstance(entry, Reply):
            return entry
        if isinstance(entry, dict):
            return Reply(body=entry)
        if isinstance(entry, str):
            if request.api == "ollama":
                return Reply(body=ollama_chat(entry))
            if request.api == "openai_audio":
                return Reply(body={"text": entry})
            return Reply(body=openai_completion(entry))
        return entry(request)

    def _handle(self, handler: _Handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=handler.command,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        counted = [True]

        def finished() -> None:
            # Called before the last bytes go out: once the client has them it may send its
            # next request, which must not find this one still counted as in flight.
            with self._lock:
                if counted[0]:
                    counted[0] = False
                    self.in_flight -= 1

        try:
            try:
                reply = self._next_reply(request)
            except Exception as exc:  # a broken responder answers 500, visibly
                logger.exception("llm test server responder failed")
                reply = Reply(status=500, body=openai_error(f"responder failed: {exc!r}"))
            wait = self.latency + reply.delay
            if wait > 0 and self.stopping.wait(wait):
                handler.close_connection = True
                return
            if reply.reset:
                self._reset(handler)
                return
            try:
                self._write(handler, reply, finished)
            except OSError:  # the client gave up (timeout) or went away
                handler.close_connection = True
        finally:
            finished()

    def _write(self, handler: _Handler, reply: Reply, finished: Callable[[], None]) -> None:
        payload, content_type = reply.encoded()
        phrase = handler.responses.get(reply.status, ("",))[0]
        headers = {
            "Content-Type": content_type,
            "Content-Length": str(10**9 if reply.endless else len(payload)),
            **reply.headers,
        }
        head = f"HTTP/1.1 {reply.status} {phrase}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        head_bytes = (head + "\r\n").encode("latin-1")
        if reply.endless:
            handler.close_connection = True
        if reply.trickle <= 0 and not reply.endless:
            finished()
            self._send(handler, head_bytes + payload, 0.0)
            return
        self._send(handler, head_bytes, reply.trickle if reply.slow_headers else 0.0)
        self._send(handler, payload, reply.trickle)
        interval = max(reply.trickle, 0.001)
        while reply.endless and not self.stopping.wait(interval):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    def _send(self, handler: _Handler, data: bytes, trickle: float) -> None:
        if trickle <= 0:
            handler.wfile.write(data)
            handler.wfile.flush()
            return
        for i in range(len(data)):
            if self.stopping.wait(trickle):
                raise ConnectionAbortedError("server stopping")
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()

    @staticmethod
    def _reset(handler: _Handler) -> None:
        """Close the connection with a TCP RST (SO_LINGER with a zero timeout)."""
        handler.close_connection = True
        sock = handler.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.rfile.close()  # drops the last reference that keeps the socket open
        handler.wfile = io.BytesIO()  # the handler flushes it after do_POST: a harmless sink
        sock.close()


@pytest.fixture
def llm_server() -> Iterator[LLMTestServer]:
    """A started :class:`LLMTestServer`, stopped after the test."""
    server = LLMTestServer().start()
    try:
        yield server
    finally:
        server.stop()
