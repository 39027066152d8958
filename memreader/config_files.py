"""Reading config files: bounded YAML loading and ``${ENV}`` interpolation, shared by every
config a user writes (a reader's, the service's, a batch job's, the keys file).

The limits hold against hostile files: a file over :data:`MAX_CONFIG_BYTES`, nesting deeper
than :data:`MAX_CONFIG_DEPTH` or expanding (YAML aliases) past :data:`MAX_CONFIG_NODES` values
is a :class:`~memreader.errors.ConfigError` naming the limit, never a hang or a
``RecursionError``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import yaml

from memreader.errors import ConfigError
from memreader.files import FileRefused, read_regular_file

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "interpolate_env",
    "read_yaml_config",
]

#: A config file larger than this is refused before it is parsed (real ones are a few KiB).
MAX_CONFIG_BYTES = 1024 * 1024
#: Nesting deeper than this is refused while parsing YAML and interpolating (real configs: ~5).
MAX_CONFIG_DEPTH = 100
#: Values visited while interpolating ``${ENV}``; YAML aliases are counted each time they are
#: used, so a "billion laughs" file is refused instead of expanded.
MAX_CONFIG_NODES = 100_000


def read_yaml_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (not yet interpolated nor validated).

    Raises:
        ConfigError: the file cannot be read or is not a regular file, is over
            ``MAX_CONFIG_BYTES``, is not UTF-8, is not valid YAML, nests deeper than
            ``MAX_CONFIG_DEPTH``, or is not a mapping.
    """
    name = os.fspath(path)
    try:
        raw = read_regular_file(path, MAX_CONFIG_BYTES)
    except FileRefused as exc:
        if not exc.too_large:
            raise ConfigError(f"cannot read config {name!r}: not a regular file") from None
        raise ConfigError(f"config {name!r} is over the {MAX_CONFIG_BYTES} byte limit") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {name!r}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config {name!r} is not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start})"
        ) from None
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {name!r} is not valid YAML: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"config {name!r}: {exc}") from None
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(
            f"config {name!r}: a reader config must be a mapping, got {type(data).__name__}"
        )
    return dict(data or {})


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing nesting deeper than ``MAX_CONFIG_DEPTH``.

    The composer recurses once per level, so without this a deeply nested file ends in a
    ``RecursionError`` instead of a ``ConfigError``.
    """

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_CONFIG_DEPTH:
                raise ConfigError(f"nested more than {MAX_CONFIG_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate_env(value: Any, path: str = "config") -> Any:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in every string of ``value``.

    The walk is bounded: more than ``MAX_CONFIG_NODES`` values (a value shared through YAML
    aliases counts each time it is reached) or nesting deeper than ``MAX_CONFIG_DEPTH`` is a
    :class:`ConfigError` naming the limit.

    >>> os.environ["MEMREADER_DOCTEST"] = "x"
    >>> interpolate_env({"a": ["${MEMREADER_DOCTEST}-${NOPE_NOT_SET:-d}"]})
    {'a': ['x-d']}
    """
    return _interpolate(value, path, 0, [0])


def _interpolate(value: Any, path: str, depth: int, visited: list[int]) -> Any:
    visited[0] += 1
    if visited[0] > MAX_CONFIG_NODES:
        raise ConfigError(
            f"{path}: the config expands to more than {MAX_CONFIG_NODES} values "
            "(YAML aliases are counted each time they are used)"
        )
    if depth > MAX_CONFIG_DEPTH:
        raise ConfigError(f"{path}: the config is nested more than {MAX_CONFIG_DEPTH} levels deep")
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{path}: environment variable {name} is not set")

        return _ENV.sub(substitute, value)
    if isinstance(value, Mapping):
        return {k: _interpolate(v, f"{path}.{k}", depth + 1, visited) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, f"{path}[{i}]", depth + 1, visited) for i, v in enumerate(value)]
    return value
