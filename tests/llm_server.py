"""A scripted LLM server for tests: OpenAI chat completions and Ollama chat over real HTTP.

It runs a stdlib :class:`~http.server.ThreadingHTTPServer` on ``127.0.0.1`` (ephemeral port) in a
background thread and answers

* ``POST /v1/chat/completions`` (OpenAI-compatible; point ``base_url`` at :attr:`url`), and
* ``POST /api/chat`` (Ollama, non-streaming; point ``host`` at :attr:`ollama_host`)

from a script: a queue of :class:`Reply` objects consumed one per request, in arrival order.
When the queue is empty, :attr:`LLMTestServer.responder` (a function of the request) answers;
by default it returns ``{}`` as the model's content in the right API's shape.

Every request is recorded (:attr:`requests`), and the server tracks requests in flight and
their maximum (:attr:`max_in_flight`), so tests can check concurrency limits. :attr:`latency`
delays every answer.

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

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "LLMTestServer",
    "RecordedRequest",
    "Reply",
    "llm_server",
    "ollama_chat",
    "openai_completion",
    "openai_error",
]

logger = logging.getLogger(__name__)

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        status: the HTTP status code.
        body: a dict/list (sent as JSON), a str (sent as is) or ``None`` (empty body).
        headers: extra response headers (e.g. ``{"Retry-After": "0"}``).
        delay: seconds to wait before answering (use it to trigger client timeouts).
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def encoded(self) -> tuple[bytes, str]:
        """The body bytes and their content type."""
        if self.body is None:
            return b"", "application/json"
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body), "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode("utf-8"), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode("utf-8"), "application/json"


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
    def api(self) -> str:
        """``"openai"``, ``"ollama"`` or ``"other"`` from the path."""
        if self.path.startswith(OPENAI_PATH):
            return "openai"
        if self.path.startswith(OLLAMA_PATH):
            return "ollama"
        return "other"

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


def default_responder(request: RecordedRequest) -> Reply:
    """Answer ``{}`` in the shape of the API that was called; 404 elsewhere."""
    if request.api == "openai":
        return Reply(body=openai_completion("{}"))
    if request.api == "ollama":
        return Reply(body=ollama_chat("{}"))
    return Reply(status=404, body={"error": f"no route for {request.path}"})


# -- the server ------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: LLMTestServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        self.server.owner._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("llm test server: " + format, *args)


ReplyLike = Reply | dict[str, Any] | str | Callable[[RecordedRequest], Reply]


class LLMTestServer:
    """A scripted OpenAI/Ollama server (see the module docstring).

    Attributes:
        responder: answers requests when the script is empty; ``fn(request) -> Reply``.
        latency: seconds added before every answer (on top of a reply's own ``delay``).
        requests: every request received, in arrival order.
        in_flight: requests being handled right now.
        max_in_flight: the most requests handled at once since start or :meth:`reset`.
    """

    def __init__(self, *, latency: float = 0.0) -> None:
        self.responder: Callable[[RecordedRequest], Reply] = default_responder
        self.latency = latency
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[ReplyLike] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> LLMTestServer:
        """Bind an ephemeral port on 127.0.0.1 and serve in a background thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed answers in progress are cut short."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

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
        200 answer in the requested API's shape) or a function ``fn(request) -> Reply``.
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
        try:
            try:
                reply = self._next_reply(request)
            except Exception as exc:  # a broken responder answers 500, visibly
                logger.exception("llm test server responder failed")
                reply = Reply(status=500, body=openai_error(f"responder failed: {exc!r}"))
            wait = self.latency + reply.delay
            if wait > 0 and self._stopping.wait(wait):
                return
            payload, content_type = reply.encoded()
            try:
                handler.send_response(reply.status)
                handler.send_header("Content-Type", content_type)
                handler.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    handler.send_header(name, value)
                handler.end_headers()
                handler.wfile.write(payload)
                handler.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                handler.close_connection = True
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def llm_server() -> Iterator[LLMTestServer]:
    """A started :class:`LLMTestServer`, stopped after the test."""
    server = LLMTestServer().start()
    try:
        yield server
    finally:
        server.stop()
