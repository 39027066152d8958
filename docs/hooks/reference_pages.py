"""mkdocs hook: the pages generated from the code on every build.

``reference/configuration.md`` from the pydantic config models, ``reference/cli.md`` from the
argparse parser, ``reference/http.md`` and ``reference/openapi.json`` from the service's
OpenAPI document, and ``measurements.md`` is ``benchmarks/RESULTS.md`` as it stands. They exist
only in the build (nothing is written into ``docs/``), so a code change shows in the next build
and ``mkdocs build --strict`` checks their links.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOOKS = Path(__file__).resolve().parent
sys.path.insert(0, str(HOOKS))

from cli_reference import cli_reference  # noqa: E402
from config_reference import config_reference  # noqa: E402
from http_reference import http_reference, openapi_json  # noqa: E402

RESULTS = HOOKS.parents[1] / "benchmarks" / "RESULTS.md"

GENERATED: dict[str, Callable[[], str]] = {
    "reference/configuration.md": config_reference,
    "reference/cli.md": cli_reference,
    "reference/http.md": http_reference,
    "reference/openapi.json": openapi_json,
    "measurements.md": lambda: RESULTS.read_text(encoding="utf-8"),
}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, write in GENERATED.items():
        files.append(File.generated(config, uri, content=write()))
    return files
