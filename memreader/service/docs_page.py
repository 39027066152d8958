"""``/docs``: the API's reference as one self-contained HTML page, built from the app's OpenAPI
document: every operation with its method, path, summary, description, parameters and
answers, and a link to ``/openapi.json`` (the whole schema, for a client generator).

FastAPI's own ``/docs`` (Swagger UI) and ``/redoc`` load their scripts and styles from a CDN,
so offline, or behind a proxy that blocks it, they are a blank page. This one references
nothing outside the service (no script at all, its style inline under a Content-Security-Policy
that allows nothing else), so it renders wherever the service answers. Every text from the
schema is HTML-escaped.
"""

from __future__ import annotations

import html
from typing import Any

from fastapi import FastAPI
from starlette.responses import HTMLResponse, Response

__all__ = ["add_docs_page", "docs_html"]

_METHODS = ("get", "post", "put", "patch", "delete")
_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 0 auto; padding: 0 1rem;
  line-height: 1.45; color: #1b1f24; }
h2 { border-top: 1px solid #d0d7de; padding-top: 0.75rem; font-size: 1.2rem; }
.op { margin: 0.75rem 0 1.25rem; }
.op h3 { font-size: 1rem; margin: 0.25rem 0; overflow-wrap: anywhere; }
.method { display: inline-block; min-width: 4.5rem; font-family: monospace; font-weight: 700; }
code, .path { font-family: ui-monospace, monospace; }
.desc { white-space: pre-wrap; margin: 0.25rem 0; }
ul { margin: 0.25rem 0; }
"""
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _text(value: Any) -> str:
    return html.escape(str(value or ""), quote=True)


def _parameters(operation: dict[str, Any]) -> str:
    rows = []
    for parameter in operation.get("parameters") or []:
        where, name = parameter.get("in", "?"), parameter.get("name", "?")
        required = " (required)" if parameter.get("required") else ""
        rows.append(f"<li><code>{_text(name)}</code> in {_text(where)}{required}</li>")
    body = (operation.get("requestBody") or {}).get("content") or {}
    if body:
        types = ", ".join(f"<code>{_text(kind)}</code>" for kind in sorted(body))
        rows.append(f"<li>body: {types}</li>")
    return f"<p>Parameters:</p><ul>{''.join(rows)}</ul>" if rows else ""


def _answers(operation: dict[str, Any]) -> str:
    answers = operation.get("responses") or {}
    items = "".join(
        f"<li><code>{_text(code)}</code> {_text((answers[code] or {}).get('description'))}</li>"
        for code in sorted(answers)
    )
    return f"<p>Answers:</p><ul>{items}</ul>" if items else ""


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    summary = operation.get("summary") or operation.get("operationId") or ""
    description = operation.get("description") or ""
    return (
        f'<div class="op"><h3><span class="method">{method.upper()}</span> '
        f'<span class="path">{_text(path)}</span></h3>'
        f"<p><strong>{_text(summary)}</strong></p>"
        + (f'<p class="desc">{_text(description)}</p>' if description else "")
        + _parameters(operation)
        + _answers(operation)
        + "</div>"
    )


def docs_html(schema: dict[str, Any], openapi_url: str = "/openapi.json") -> str:
    """The reference page of the OpenAPI document ``schema``, grouped by tag."""
    info = schema.get("info") or {}
    groups: dict[str, list[str]] = {}
    for path, operations in sorted((schema.get("paths") or {}).items()):
        for method in _METHODS:
            operation = operations.get(method)
            if operation is not None:
                tag = (operation.get("tags") or ["other"])[0]
                groups.setdefault(str(tag), []).append(_operation(method, path, operation))
    sections = "".join(
        f"<h2>{_text(tag)}</h2>{''.join(ops)}" for tag, ops in sorted(groups.items())
    )
    title = f"{_text(info.get('title'))} {_text(info.get('version'))} API"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{title}</h1><p>{_text(info.get('description'))}</p>"
        f'<p>The whole schema: <a href="{_text(openapi_url)}">openapi.json</a> (OpenAPI '
        f"{_text(schema.get('openapi'))}). Every route answers errors as "
        "<code>application/problem+json</code>.</p>"
        f"<nav><p>Sections: {', '.join(_text(tag) for tag in sorted(groups))}</p></nav>"
        f"{sections}</body></html>"
    )


def add_docs_page(app: FastAPI) -> None:
    """Serve :func:`docs_html` of ``app`` at ``/docs`` (create the app with ``docs_url=None``
    and ``redoc_url=None``: theirs load from a CDN)."""
    page: list[str] = []  # built on first use: every route is registered by then

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        if not page:
            page.append(docs_html(app.openapi(), app.openapi_url or "/openapi.json"))
        return HTMLResponse(page[0], headers=_HEADERS)
