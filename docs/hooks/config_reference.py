"""The configuration reference, written from the pydantic models that read each file.

Every field of every model a config file reaches (readers, embedders, LLMs, the life cycle,
batch jobs, the service and its keys), with its type, its default and its description, so the
page cannot drift from the code: it is rebuilt on every ``mkdocs build``.

Readers and embedders are listed from their registries, so a new backend appears here with no
edit to this file.
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docstring_markdown import plain  # a module beside this one (docs/hooks/)
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = ["config_reference"]

_INTRO = """# Configuration reference

Generated from the code on every build of this site: each section is one pydantic model, each
row one field (`extra` fields are refused: a misspelt name is a `ConfigError` naming it). A
type that is a model of its own links to its section. How the settings fit together, with
examples, is in [Configuration](../concepts/configuration.md).
"""


def _roots() -> list[tuple[str, str, type[BaseModel]]]:
    """(heading, how a file reaches it, model) for each top-level config."""
    from memreader.batch.job import JobConfig
    from memreader.embedders.backends import EMBEDDERS
    from memreader.llms.config import LLMConfig
    from memreader.readers import READERS
    from memreader.stores.lifecycle.config import LifecycleConfig

    roots: list[tuple[str, str, type[BaseModel]]] = []
    for name in READERS.names():
        roots.append(
            (
                f"Reader `{name}`",
                f"`backend: {name}`, then `config:`",
                READERS.get(name).config_class,
            )
        )
    for name in EMBEDDERS.names():
        model = EMBEDDERS.get(name).config_class
        roots.append((f"Embedder `{name}`", f"`embedder: {{backend: {name}, config: ...}}`", model))
    roots.append(("LLM", "`llm:` and every other LLM slot", LLMConfig))
    roots.append(
        ("Life cycle", "`lifecycle:` (a reader's, or `Memory(lifecycle=...)`)", LifecycleConfig)
    )
    roots.append(("Batch job", "a job file (`memreader ingest JOB`)", JobConfig))
    try:
        from memreader.service.config import ServiceSettings
        from memreader.service.keys import ApiKey
    except ImportError:  # the service extra is not installed: its sections are left out
        return roots
    roots.append(("Service", "`service:` in `memreader serve --config FILE`", ServiceSettings))
    roots.append(("API key", "each entry of `service.keys` or of `keys_file`", ApiKey))
    return roots


def _anchor(model: type) -> str:
    return "model-" + re.sub(r"[^a-z0-9]+", "-", model.__qualname__.lower()).strip("-")


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation names (inside unions, lists, dicts, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _type_name(annotation: Any) -> str:
    """A short spelling of a field's type, models as links to their sections."""
    if annotation is None or annotation is type(None):
        return "null"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return f"[{annotation.__name__}](#{_anchor(annotation)})"
        if issubclass(annotation, enum.Enum):
            return " | ".join(repr(member.value) for member in annotation)
        if annotation is SecretStr:
            return "secret str"
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(repr(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(arg) for arg in args)}]" if args else name
    return str(annotation).replace("typing.", "")


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, SecretStr):
        return "(secret)"
    return f"`{value!r}`" if len(repr(value)) < 60 else "(long)"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _summary(model: type) -> str:
    return plain(inspect.getdoc(model) or "")


def _field_notes(model: type) -> dict[str, str]:
    """Each field's comment lines above it, or the string below it, in the source of the
    model and of the memreader classes it inherits from (pydantic's own are not read)."""
    notes: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if cls.__module__.split(".")[0] == "memreader":
            notes.update(_class_notes(cls))
    return notes


@functools.cache
def _module_source(filename: str) -> tuple[ast.Module, list[str]]:
    """A module's syntax tree and lines, read once however many of its classes are shown."""
    source = Path(filename).read_text(encoding="utf-8")
    return ast.parse(source), source.splitlines()


@functools.cache
def _class_notes(cls: type) -> dict[str, str]:
    try:
        tree, lines = _module_source(inspect.getfile(cls))
    except (OSError, TypeError, SyntaxError):
        return {}
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__
    ]
    body = found[0].body if found else []
    notes: dict[str, str] = {}
    for index, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        after = body[index + 1] if index + 1 < len(body) else None
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            notes[node.target.id] = str(after.value.value)
            continue
        comments: list[str] = []
        line = node.lineno - 2
        while line >= 0 and lines[line].strip().startswith("#"):
            comments.insert(0, lines[line].strip().lstrip("#").strip())
            line -= 1
        if comments:
            notes[node.target.id] = " ".join(comments)
    return notes


def _bounds(field: FieldInfo) -> str:
    shown = []
    for item in field.metadata:
        for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(item, name, None)
            if value is not None:
                shown.append(f"{sign} {value}")
        for name in ("min_length", "max_length"):
            value = getattr(item, name, None)
            if value is not None:
                shown.append(f"{name.replace('_', ' ')} {value}")
    return ", ".join(shown)


def _section(model: type[BaseModel]) -> list[str]:
    lines = [f"### {model.__name__} {{#{_anchor(model)}}}", ""]
    lines.append(f"`{model.__module__}.{model.__qualname__}`")
    summary = _summary(model)
    if summary:
        lines += ["", summary]
    lines += ["", "| field | type | default | description |", "|---|---|---|---|"]
    notes = _field_notes(model)
    for name, field in model.model_fields.items():
        shown = field.alias or name
        parts = [field.description or notes.get(name, ""), _bounds(field)]
        description = _cell(plain("; ".join(part for part in parts if part)))
        kind = _cell(_type_name(field.annotation))
        lines.append(f"| `{shown}` | {kind} | {_default(field)} | {description} |")
    return [*lines, ""]


def config_reference() -> str:
    """The configuration reference page (Markdown)."""
    out = [_INTRO, "## Files and their models", ""]
    roots = _roots()
    out += [
        f"- {heading}: {where}: [{model.__name__}](#{_anchor(model)})"
        for heading, where, model in roots
    ]
    out += ["", "## Models", ""]
    seen: set[type] = set()
    queue = [model for _, _, model in roots]
    while queue:
        model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        out += _section(model)
        for field in model.model_fields.values():
            queue += [m for m in _models_in(field.annotation) if m not in seen]
    return "\n".join(out)
