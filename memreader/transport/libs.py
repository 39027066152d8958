"""The two HTTP libraries the SDKs are built on: httpx (ollama) and httpx2 (the openai SDK from
version 3), the same API under two names, each over its own httpcore."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["HTTPLib", "http_lib", "mapped_errors", "openai_http_lib"]


@dataclass(frozen=True)
class HTTPLib:
    """An httpx-like library and the httpcore-like library under it."""

    name: str
    httpx: Any
    httpcore: Any


@cache
def http_lib(name: str = "httpx") -> HTTPLib:
    """``"httpx"`` (over httpcore) or ``"httpx2"`` (over httpcore2)."""
    core = {"httpx": "httpcore", "httpx2": "httpcore2"}.get(name)
    if core is None:
        raise ValueError(f"unknown HTTP library {name!r}; expected 'httpx' or 'httpx2'")
    return HTTPLib(name, importlib.import_module(name), importlib.import_module(core))


def openai_http_lib(openai_module: Any) -> HTTPLib:
    """The library the installed openai SDK is built on (httpx2 from openai 3, else httpx)."""
    client_class = getattr(openai_module, "DefaultHttpxClient", None)
    with contextlib.suppress(ImportError):
        lib = http_lib("httpx2")
        if isinstance(client_class, type) and issubclass(client_class, lib.httpx.Client):
            return lib
    return http_lib("httpx")


@contextlib.contextmanager
def mapped_errors(lib: HTTPLib) -> Iterator[None]:
    """httpcore errors as the httpx errors of the same name (what httpx's transport does)."""
    try:
        yield
    except Exception as exc:
        for cls in type(exc).__mro__:
            package = cls.__module__.partition(".")[0]
            if package == lib.httpcore.__name__ and hasattr(lib.httpx, cls.__name__):
                raise getattr(lib.httpx, cls.__name__)(str(exc)) from exc
        raise
