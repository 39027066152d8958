"""Helpers that keep secrets out of reprs and dumps: URLs with credentials, ``SecretStr`` values.

Config models dump secrets as ``SecretStr`` in python mode (so a dump printed or logged shows
``**********``, and validating the dump again restores the secret) and as ``**********`` in
JSON mode. These helpers are shared by the LLM and embedder configs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

__all__ = [
    "MASK",
    "SecretUrl",
    "find_non_finite",
    "mask_url",
    "reveal",
    "secret_url",
    "url_has_credentials",
]

MASK = "**********"


def url_has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password (``http://user:pw@host``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.netloc) and "@" in parts.netloc


def mask_url(url: str) -> str:
    """``url`` with its user name and password replaced by ``***``.

    >>> mask_url("https://user:pw@example.com:8443/v1")
    'https://***@example.com:8443/v1'
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        # Unparseable: the userinfo cannot be located, so nothing of it may show.
        return MASK if "@" in url else url
    if "@" not in parts.netloc:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


class SecretUrl(SecretStr):
    """A URL with credentials: shown with its user name and password masked, the rest visible
    (``SecretUrl('http://***@example.com/v1')``)."""

    def __str__(self) -> str:
        return mask_url(self.get_secret_value())

    def __repr__(self) -> str:
        return f"SecretUrl({str(self)!r})"


def secret_url(url: str) -> str | SecretUrl:
    """``url`` wrapped in :class:`SecretUrl` when it carries credentials, else unchanged."""
    return SecretUrl(url) if url_has_credentials(url) else url


def reveal(value: Any) -> Any:
    """A ``SecretStr`` as its plain value; anything else unchanged (for ``mode="before"``
    validators that accept their own python-mode dumps)."""
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def find_non_finite(value: Any, path: str = "", depth: int = 0) -> str | None:
    """The path of the first infinite or NaN float inside ``value`` (mappings and lists), or
    ``None``. Nesting beyond 100 levels is not searched (config values are validated for depth
    before they get here)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "(value)")
    if depth > 100:
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = find_non_finite(item, f"{path}.{key}" if path else str(key), depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_non_finite(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
    return None
