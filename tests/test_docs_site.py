"""The docs site's generated reference pages say what the code does (issue 42).

``docs/hooks/`` writes the configuration, command-line and HTTP references from the code on
every ``mkdocs build`` (``make docs-build``, part of ``make test``, builds the whole site with
``--strict``). These tests hold the generators to the code without building the site: every
field, command and route appears, and the site's layout keeps what the build relies on.
"""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"
sys.path.insert(0, str(HOOKS))

import cli_reference  # noqa: E402
import config_reference  # noqa: E402
import docstring_markdown  # noqa: E402


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data: its ``!!python/...`` tags (the slugify function) read as nothing."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def _mkdocs() -> dict[str, object]:
    data = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert isinstance(data, dict)
    return data


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in _nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


@pytest.fixture(scope="module")
def config_page() -> str:
    return config_reference.config_reference()


def test_the_docstring_converter_examples_hold() -> None:
    assert doctest.testmod(docstring_markdown).failed == 0


def test_every_field_of_every_reader_config_is_in_the_configuration_reference(
    config_page: str,
) -> None:
    from memreader.readers import READERS

    page = config_page
    for name in READERS.names():
        model = READERS.get(name).config_class
        assert f"### {model.__name__} " in page
        for field in model.model_fields:
            assert f"| `{field}` |" in page, f"{model.__name__}.{field}"


def test_nested_models_are_documented_and_linked(config_page: str) -> None:
    from memreader.config import FineConfig

    page = config_page
    assert "[FineConfig](#model-fineconfig)" in page
    assert "{#model-fineconfig}" in page
    for field in FineConfig.model_fields:
        assert f"| `{field}` |" in page


def test_every_command_is_in_the_cli_reference() -> None:
    from memreader.cli import build_parser

    page = cli_reference.cli_reference()
    for name in cli_reference._subcommands(build_parser()):
        assert f"## `memreader {name}`" in page
    assert "usage: memreader search" in page


def test_every_route_is_in_the_http_reference() -> None:
    pytest.importorskip("fastapi")
    import http_reference

    document = http_reference.openapi_document()
    page = http_reference.http_reference()
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"### `{method.upper()} {path}`" in page


def test_every_page_is_in_the_nav_and_incoming_pages_stay_out() -> None:
    config = _mkdocs()
    listed = set(_nav_pages(config["nav"]))
    generated = {"reference/configuration.md", "reference/cli.md", "reference/http.md"}
    generated.add("measurements.md")
    written = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    hidden = {"moved_modules.md"}
    excluded = tuple(str(config["exclude_docs"]).split())
    in_build = {p for p in written if not p.startswith(excluded)}
    assert not in_build - hidden - listed, "pages missing from the nav"
    assert generated <= listed
    assert "incoming/" in str(config["exclude_docs"])


def test_the_site_fetches_nothing_when_read() -> None:
    """No web fonts (Material loads Google's by default) and no plugin that downloads."""
    config = _mkdocs()
    theme = config["theme"]
    assert isinstance(theme, dict) and theme["font"] is False
    plugins = [next(iter(p)) if isinstance(p, dict) else p for p in config["plugins"]]  # type: ignore[attr-defined]
    assert not {"social", "privacy", "optimize"} & set(plugins)
