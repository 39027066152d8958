"""The one way configs keep secrets and runtime objects out of reprs, dumps and logs.

One set of rules (:func:`hide_secrets`) says what is hidden in a config tree:

* a string under a secret-looking key (``api_key``, ``access-token``, ``password``, ...; not
  ``max_input_tokens``) becomes a ``SecretStr``;
* a header value whose name looks secret (``Authorization``, ``X-Api-Token``, ``Cookie``, ...)
  under a headers key (``extra_headers``, ``headers``, ``default_headers``) becomes a
  ``SecretStr``;
* a URL with a user name or password, anywhere, becomes a :class:`SecretUrl` (shown with
  ``***`` for its credentials, the rest visible);
* an object that is not data (a transport, a script) becomes an :class:`OpaqueRef`: shown by its
  type only, dumped as a handle in python mode and as ``null`` in JSON, and identified by
  identity in cache keys.

:func:`reveal_secrets` undoes it. The raw settings of an embedder
(:class:`~memreader.embedders.config.EmbedderConfig`) are hidden when validated; typed configs
(:class:`HidesSecrets`) keep their values in clear for the code that needs them and hide them in
reprs and dumps. Python-mode dumps keep secrets as ``SecretStr`` (so a dump that is printed shows
``**********``, and validating the dump again restores them); JSON dumps show ``**********``
and masked URLs. :func:`mask_url` is the one helper that masks URL credentials in text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    PlainSerializer,
    SecretStr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import SchemaSerializer, core_schema

__all__ = [
    "MASK",
    "HidesSecrets",
    "Opaque",
    "OpaqueRef",
    "SecretUrl",
    "find_non_finite",
    "hide_secrets",
    "is_secret_header",
    "is_secret_key",
    "mask_secrets",
    "mask_url",
    "reveal",
    "reveal_secrets",
    "secret_url",
    "url_has_credentials",
]

MASK = "**********"

_SECRET_WORDS = frozenset(
    {"key", "apikey", "secret", "password", "passwd", "token", "authorization", "credential"}
)
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password|credential", re.IGNORECASE)
_HEADER_KEYS = frozenset({"headers", "extra_headers", "default_headers"})
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")
# What a config tree may hold as data; anything else is a runtime object.
_DATA = (str, int, float, bool, type(None), bytes)


def is_secret_key(name: str) -> bool:
    """Whether a config key names a secret: one of its words is ``key``, ``token``, ``secret``,
    ``password``, ... (``api_key``, ``access-token``; not ``max_input_tokens``)."""
    return any(part in _SECRET_WORDS for part in re.split(r"[_\-\s.]+", name.lower()))


def is_secret_header(name: str) -> bool:
    """Whether an HTTP header's value is a secret (``Authorization``, ``X-Api-Token``, ...)."""
    return bool(_SECRET_HEADER.search(name))


def url_has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password (``http://user:pw@host``)."""
    return bool(_USERINFO.search(url))


def mask_url(text: str) -> str:
    """``text`` with the user name and password of every URL in it replaced by ``***``.

    >>> mask_url("https://user:pw@example.com:8443/v1")
    'https://***@example.com:8443/v1'
    >>> mask_url("GET http://u:p@ss@[::1]:80/x and http://plain/")
    'GET http://***@[::1]:80/x and http://plain/'
    """
    return _USERINFO.sub(r"\g<scheme>***@", text)


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


class OpaqueRef:
    """A runtime object in a config (a transport, a script): not data, never shown.

    Its repr names the object's type only; python-mode dumps keep the reference (validating the
    dump again restores the object); JSON dumps write ``null``; its ``str`` is the object's
    identity, so a cache key built from a dump tells two objects apart (and an object equal to
    another is still another).
    """

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        return f"OpaqueRef({type(self.obj).__qualname__})"

    def __str__(self) -> str:
        return f"opaque:{type(self.obj).__module__}.{type(self.obj).__qualname__}@{id(self.obj):x}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueRef) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _dump_opaque(value: Any, info: SerializationInfo) -> Any:
    if info.mode_is_json():
        return None
    return value


# pydantic finds a serializer for values of unknown type (inside ``dict[str, Any]``) here.
OpaqueRef.__pydantic_serializer__ = SchemaSerializer(  # type: ignore[attr-defined]
    core_schema.any_schema(
        serialization=core_schema.plain_serializer_function_ser_schema(_dump_opaque, info_arg=True)
    )
)


def _dump_opaque_field(value: Any, info: SerializationInfo) -> Any:
    if value is None or info.mode_is_json():
        return None
    return value if isinstance(value, OpaqueRef) else OpaqueRef(value)


#: The type of a config field holding a runtime object (see :class:`OpaqueRef`).
Opaque = Annotated[Any, PlainSerializer(_dump_opaque_field)]


def hide_secrets(value: Any, *, key: str | None = None, headers: bool = False) -> Any:
    """A copy of a config tree with its secrets and runtime objects wrapped (module docstring).

    ``key`` is the name ``value`` sits under; ``headers`` says that it is a header value.
    Values wrapped already stay as they are.
    """
    if isinstance(value, (SecretStr, OpaqueRef, BaseModel)):
        return value  # hidden already, or a model that hides its own
    if isinstance(value, Mapping):
        inner = key is not None and key.lower() in _HEADER_KEYS
        return {
            name: hide_secrets(item, key=str(name), headers=inner) for name, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return _same_sequence(value, [hide_secrets(item, key=key) for item in value])
    if isinstance(value, str):
        secret = key is not None and (is_secret_header(key) if headers else is_secret_key(key))
        if secret:
            return SecretStr(value)
        return secret_url(value)
    if isinstance(value, _DATA):
        return value
    return OpaqueRef(value)


def reveal(value: Any) -> Any:
    """One hidden value in clear (a ``SecretStr`` as its string, an :class:`OpaqueRef` as its
    object); anything else unchanged."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, OpaqueRef):
        return value.obj
    return value


def reveal_secrets(value: Any) -> Any:
    """The inverse of :func:`hide_secrets`."""
    if isinstance(value, Mapping):
        return {name: reveal_secrets(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return _same_sequence(value, [reveal_secrets(item) for item in value])
    return reveal(value)


def _same_sequence(value: list[Any] | tuple[Any, ...], items: list[Any]) -> Any:
    """``items`` in ``value``'s type: a named tuple takes them as its fields, by position (its
    constructor does not take one iterable), a list or tuple (or a subclass) as one iterable."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*items)
    return type(value)(items)


def mask_secrets(value: Any, *, key: str | None = None, headers: bool = False) -> Any:
    """A JSON-mode dump with what :func:`hide_secrets` would hide shown as :data:`MASK` (URLs:
    credentials masked, runtime objects: ``None``)."""
    hidden = hide_secrets(value, key=key, headers=headers)
    return _masked(hidden)


def _masked(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {name: _masked(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item) for item in value]
    if isinstance(value, SecretUrl):
        return str(value)
    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, OpaqueRef):
        return None
    return value


class HidesSecrets(BaseModel):
    """A config model whose reprs and dumps hide secrets by :func:`hide_secrets`'s rules.

    Fields hold their values in clear (``api_key`` is a ``SecretStr`` field anyway); reprs show
    them hidden, python-mode dumps keep them as ``SecretStr``/:class:`SecretUrl`/
    :class:`OpaqueRef` (validating a dump again restores them), and JSON dumps mask them.
    """

    @model_validator(mode="before")
    @classmethod
    def _reveal_dump(cls, data: Any) -> Any:
        # Accept this model's own python-mode dump, where secrets are wrapped.
        return reveal_secrets(data) if isinstance(data, Mapping) else data

    @model_serializer(mode="wrap")
    def _hide_dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, Mapping):  # pragma: no cover - a model dumps to a mapping
            return data
        if info.mode_is_json():
            return {name: mask_secrets(item, key=name) for name, item in data.items()}
        return {name: hide_secrets(item, key=name) for name, item in data.items()}

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (value if name is None else hide_secrets(value, key=name))


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
