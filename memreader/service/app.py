"""The HTTP service: :func:`create_app` builds the FastAPI app of a :class:`ServiceConfig`.

>>> from memreader.service import ServiceConfig, create_app
>>> from memreader.factory import MemReaderConfigFactory
>>> app = create_app(ServiceConfig(MemReaderConfigFactory(config={"embedder": None})))
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/memories/{"))
['/v1/memories/{memory_id}', '/v1/memories/{memory_id}/history', '/v1/memories/{memory_id}:restore']
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response
from starlette.types import Scope

from memreader._version import __version__
from memreader.errors import MemReaderError
from memreader.readers.base import BaseMemReader
from memreader.service import (
    routes_categories,
    routes_context,
    routes_jobs,
    routes_lifecycle,
    routes_memories,
    routes_read,
    routes_recall,
)
from memreader.service.admission import Admission
from memreader.service.bodies import BodyLimit
from memreader.service.config import ServiceConfig
from memreader.service.docs_page import add_docs_page
from memreader.service.metrics import CONTENT_TYPE
from memreader.service.problems import ProblemError, problem_for, problem_response
from memreader.service.state import ServiceState, json_response
from memreader.stores import MemoryStore

__all__ = ["create_app"]

_STATUS_TITLES = {400: "Bad request", 404: "Not found", 405: "Method not allowed"}
#: Methods counted by name; any other a client sends is counted as OTHER (bounded labels).
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


def create_app(
    config: ServiceConfig,
    *,
    reader: BaseMemReader | None = None,
    store: MemoryStore | None = None,
) -> FastAPI:
    """The app serving ``config`` (its reader built now; its store opened on first use).

    ``reader`` and ``store`` replace the configured ones (tests, embedding the service in a
    larger app); the app closes them when it stops.
    """
    state = ServiceState(config, reader=reader, store=store)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        maintenance = state.maintenance()
        if maintenance is not None:
            maintenance.start()
        repair = state.index_repair()  # runs beside the requests; start-up does not wait
        if repair is not None:
            repair.start()
        try:
            yield
        finally:
            if repair is not None:
                await repair.stop()
            if maintenance is not None:
                await maintenance.stop()
            state.close()

    app = FastAPI(
        title="memreader",
        version=__version__,
        description="Chats and documents into memory items with exact provenance; a memory "
        "store to search, trace and forget them.",
        lifespan=lifespan,
        # Swagger UI and ReDoc load from a CDN (blank offline): /docs is a page of our own.
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = state
    routers = (
        routes_read,
        routes_memories,
        routes_lifecycle,
        routes_context,
        routes_recall,
        routes_jobs,
        routes_categories,
    )
    for module in routers:
        app.include_router(module.router)
    _add_handlers(app)
    _add_operations(app, state)
    add_docs_page(app)
    if config.settings.ui:
        static = resources.files("memreader.service") / "static"
        app.mount("/ui", _Page(directory=str(static), html=True), name="ui")
    app.add_middleware(
        BodyLimit,
        limit=config.settings.max_request_bytes,
        timeout_s=config.settings.body_timeout_s,
    )
    # Outside the body limit: who a request is, and its slot, are settled from its headers
    # before a byte of its body is read (401 before 413, 400 or 422).
    routes = [route for module in routers for route in module.router.routes]
    app.add_middleware(Admission, state=state, routes=routes)
    app.add_middleware(_Observe, state=state)
    return app


def _add_operations(app: FastAPI, state: ServiceState) -> None:
    fine_mode = _has_llm(state.reader)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> Response:
        """Liveness: 200 while the process serves; ``fine_mode`` says whether the reader has
        an LLM (the page offers fine mode only then)."""
        return json_response({"status": "ok", "version": __version__, "fine_mode": fine_mode})

    @app.get("/metrics", tags=["operations"])
    async def metrics() -> Response:
        """Prometheus text: requests, latency, LLM calls and tokens, windows by status."""
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse("/ui/" if state.config.settings.ui else "/docs")


def _has_llm(reader: BaseMemReader) -> bool:
    """Whether ``reader`` can read in fine mode (its config names an LLM)."""
    resolve = getattr(reader.config, "resolve", None)
    return bool(callable(resolve) and resolve("llm") is not None)


def _add_handlers(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> Response:
        return problem_response(problem_for(exc), request.url.path)

    async def on_invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return problem_response(invalid_request(exc), request.url.path)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        title = _STATUS_TITLES.get(exc.status_code, "HTTP error")
        problem = ProblemError(
            exc.status_code,
            title.lower().replace(" ", "-"),
            title,
            str(exc.detail),
            headers=dict(exc.headers or {}),
        )
        return problem_response(problem, request.url.path)

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(MemReaderError, on_problem)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Exception, on_problem)


class _Page(StaticFiles):
    """The page's files, with headers that keep a stored memory's text from ever running as
    code in it: the page has no inline script or style, so nothing but its own files may run."""

    HEADERS: ClassVar[dict[str, str]] = {
        "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(self.HEADERS)
        return response


def invalid_request(exc: RequestValidationError) -> ProblemError:
    """400 for a body that is not JSON, else 422 naming each invalid field (never its value:
    it may be a secret, or huge)."""
    errors: list[dict[str, Any]] = []
    for error in exc.errors():
        named = {"loc": ".".join(str(p) for p in error.get("loc", ())), "msg": error.get("msg")}
        # The body is validated once per dependency that reads it (owner, scope, the route):
        # each invalid field is named once.
        if named not in errors:
            errors.append(named)
    if any(error.get("type") == "json_invalid" for error in exc.errors()):
        return ProblemError(
            400,
            "malformed-json",
            "Malformed JSON",
            "the request body is not valid JSON",
            extra={"errors": errors},
        )
    detail = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors)
    return ProblemError(422, "invalid-request", "Invalid request", detail, extra={"errors": errors})


class _Observe:
    """Counts every request (by route template, so ids do not explode the metrics)."""

    def __init__(self, app: Any, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def observed_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        metrics = self.state.metrics
        metrics.in_flight.inc()
        try:
            await self.app(scope, receive, observed_send)
        finally:
            metrics.in_flight.dec()
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            metrics.observe_request(method, path, status, time.perf_counter() - started)
