"""``memreader serve``: the reader and the store over HTTP, with keys that wall off users,
and a web page that shows where every memory came from.

    from memreader.service import create_app, load_service_config
    app = create_app(load_service_config("service.yaml"))   # a FastAPI app

Needs the ``service`` extra (``pip install 'memreader-ai[service]'``): FastAPI, uvicorn and the
Prometheus client are imported when these names are first used, so the key helpers
(:mod:`memreader.service.keys`) work without them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["ServiceConfig", "ServiceSettings", "create_app", "load_service_config"]

_HOMES = {
    "create_app": "memreader.service.app",
    "ServiceConfig": "memreader.service.config",
    "ServiceSettings": "memreader.service.config",
    "load_service_config": "memreader.service.config",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memreader.service' has no attribute {name!r}")
    return getattr(import_module(home), name)
