"""The HTTP reference, written from the service's OpenAPI document.

The FastAPI app's own ``openapi()``: every route with its method, summary, parameters, request
body and answers, and the document itself for tools that read OpenAPI. Rebuilt on every
``mkdocs build``, so it cannot drift from the routes.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from docstring_markdown import plain

__all__ = ["http_reference", "openapi_document", "openapi_json"]

#: The variable naming memreader's home (its default store); see memreader.front.home.
HOME_ENV = "MEMREADER_HOME"

_INTRO = """# HTTP reference

Generated from the service's OpenAPI document on every build of this site (a running service
serves the same at `/openapi.json`, and a page of it at `/docs`; the document itself:
[openapi.json](openapi.json)). How to run the service, its
keys and its limits are in [Service](../guides/service.md).
"""


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of an app built from the default config. No request is made, and
    whatever the app would open by default lives in a temporary home, never the user's data
    folder (the build may run anywhere)."""
    from memreader.service.app import create_app
    from memreader.service.config import ServiceConfig

    before = os.environ.get(HOME_ENV)
    with tempfile.TemporaryDirectory() as home:
        os.environ[HOME_ENV] = home
        try:
            document: dict[str, Any] = create_app(ServiceConfig.from_dict({})).openapi()
        finally:
            if before is None:
                del os.environ[HOME_ENV]
            else:
                os.environ[HOME_ENV] = before
    return document


def _ref_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "items" in schema:
        return f"list[{_ref_name(schema['items'])}]"
    if "anyOf" in schema:
        return " | ".join(_ref_name(option) for option in schema["anyOf"])
    return str(schema.get("type", "object"))


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _operation(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    title = operation.get("summary") or operation.get("operationId", "")
    lines = [f"### `{method.upper()} {path}`", "", f"**{_cell(title)}**", ""]
    if operation.get("description"):
        lines += [plain(operation["description"].strip()), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} "
                f"| {_cell(_ref_name(parameter.get('schema', {})))} "
                f"| {'yes' if parameter.get('required') else 'no'} "
                f"| {_cell(parameter.get('description', ''))} |"
            )
        lines.append("")
    body = operation.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        lines += [f"Body ({media}): `{_ref_name(content.get('schema', {}))}`", ""]
    answers = operation.get("responses", {})
    if answers:
        lines += ["| status | meaning |", "|---|---|"]
        lines += [
            f"| {code} | {_cell(answer.get('description', ''))} |"
            for code, answer in answers.items()
        ]
        lines.append("")
    return lines


def _schemas(document: dict[str, Any]) -> list[str]:
    lines = ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [_cell(plain(schema["description"])), ""]
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            lines += ["| field | type | required | description |", "|---|---|---|---|"]
            for field, spec in properties.items():
                needed = "yes" if field in required else "no"
                meaning = _cell(spec.get("description", spec.get("title", "")))
                lines.append(f"| `{field}` | {_cell(_ref_name(spec))} | {needed} | {meaning} |")
            lines.append("")
    return lines


def http_reference() -> str:
    """The HTTP reference page (Markdown)."""
    document = openapi_document()
    out = [_INTRO, "## Routes", ""]
    for path, methods in document.get("paths", {}).items():
        for method, operation in methods.items():
            out += _operation(method, path, operation)
    out += _schemas(document)
    return "\n".join(out)


def openapi_json() -> str:
    """The OpenAPI document as the site serves it beside the page (``openapi.json``)."""
    return json.dumps(openapi_document(), indent=1, sort_keys=True) + "\n"
