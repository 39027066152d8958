"""One registry type for everything memreader looks up by name: readers, part parsers,
embedders, LLM backends and pipeline steps.

The rules are chonkie's: registering the same object twice under one name is a no-op (a module
imported twice, a plugin loaded again), and a different object under a taken name raises, so a
plugin can never silently replace a built-in. Built-ins that are costly to import are named with
the module that registers them and imported on first lookup.

Plugins from other packages are found through the package entry-point group
``memreader.plugins``: each entry point names a module (or an object in one) whose import
registers what it brings. They are loaded once, the first time a name is not found or the names
are listed::

    # pyproject.toml of a plugin package
    [project.entry-points."memreader.plugins"]
    mytools = "mytools.memreader_plugin"

>>> colors = Registry[str]("color")
>>> colors.register("red", "#f00")
'#f00'
>>> colors.register("red", "#f00")   # the same again: a no-op
'#f00'
>>> colors.get("red")
'#f00'
>>> colors.get("blue")
Traceback (most recent call last):
memreader.errors.ConfigError: unknown color 'blue'; known: red
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar, overload

from memreader.errors import ConfigError

__all__ = ["PLUGIN_GROUP", "Registry", "RegistryError", "load_plugins"]

logger = logging.getLogger(__name__)

#: The entry-point group plugin packages declare.
PLUGIN_GROUP = "memreader.plugins"

T = TypeVar("T")
Obj = TypeVar("Obj")


class RegistryError(ConfigError):
    """A name is taken by a different object."""


# Re-entrant: a plugin whose import looks a name up (validates a config, say) loads plugins again
# from inside load_plugins; that nested call returns at once instead of deadlocking.
_plugins_lock = threading.RLock()
_plugins_loaded = False
_plugin_failures: dict[str, str] = {}


def load_plugins(*, force: bool = False) -> dict[str, str]:
    """Import every ``memreader.plugins`` entry point once (again with ``force``).

    A plugin that fails to load is logged and skipped (one broken package must not break every
    lookup); the failures are returned, name -> reason, and named when a lookup fails.
    """
    global _plugins_loaded
    with _plugins_lock:
        if _plugins_loaded and not force:
            return dict(_plugin_failures)
        _plugins_loaded = True
        failures: dict[str, str] = {}
        for point in entry_points(group=PLUGIN_GROUP):
            try:
                point.load()
            except Exception as exc:  # a broken plugin is reported, never fatal to lookups
                reason = f"{type(exc).__name__}: {exc}"
                failures[point.name] = reason
                logger.warning("memreader plugin %r failed to load: %s", point.name, reason)
        # The failures of this load only: a plugin uninstalled since is no longer named.
        _plugin_failures.clear()
        _plugin_failures.update(failures)
        return dict(_plugin_failures)


def _same(a: object, b: object) -> bool:
    # A module imported under two names (or reloaded) defines equal classes that are not the
    # same object; they are the same registration.
    if a is b or (not callable(a) and a == b):
        return True
    return (
        getattr(a, "__module__", None) is not None
        and getattr(a, "__module__", None) == getattr(b, "__module__", None)
        and getattr(a, "__qualname__", None) is not None
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
    )


class Registry(Generic[T]):
    """Objects of one kind by name (names are case-insensitive, stored lower-case).

    Args:
        kind: what the objects are, for messages (``"reader"``, ``"LLM backend"``).
        lazy: built-in names and the module whose import registers each.
    """

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._lazy = {k.lower(): v for k, v in (lazy or {}).items()}
        self._lock = threading.RLock()

    @overload
    def register(self, name: str) -> Callable[[Obj], Obj]: ...

    @overload
    def register(self, name: str, obj: Obj) -> Obj: ...

    def register(self, name: str, obj: object = None) -> object:
        """Register ``obj`` under ``name``; without ``obj``, a decorator that does.

        Raises:
            RegistryError: ``name`` is registered to a different object.
        """
        key = self._key(name)

        def add(item: Obj) -> Obj:
            with self._lock:
                existing = self._items.get(key)
                if existing is not None and not _same(existing, item):
                    raise RegistryError(
                        f"{self.kind} {key!r} is already registered to {_describe(existing)}; "
                        f"cannot register {_describe(item)} under the same name"
                    )
                if existing is None:
                    self._items[key] = item  # type: ignore[assignment]
            return item

        if obj is None:
            return add
        return add(obj)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (for tests and plugins that clean up)."""
        with self._lock:
            self._items.pop(self._key(name), None)

    def get(self, name: str) -> T:
        """The object registered under ``name``.

        Raises:
            ConfigError: nothing is, after importing the built-in module that would register
                it and loading the plugins; the message lists the known names.
        """
        key = self._key(name)
        found = self._find(key)
        if found is None:
            failures = load_plugins()
            found = self._find(key)
            if found is None:
                known = ", ".join(self.names()) or "none"
                message = f"unknown {self.kind} {name!r}; known: {known}"
                if failures:
                    message += f" (plugins that failed to load: {', '.join(sorted(failures))})"
                raise ConfigError(message)
        return found

    def _find(self, key: str) -> T | None:
        with self._lock:
            item = self._items.get(key)
            module = self._lazy.get(key) if item is None else None
        if module is not None:
            importlib.import_module(module)
            with self._lock:
                item = self._items.get(key)
        return item

    def holds(self, obj: object) -> bool:
        """Whether ``obj`` itself is registered under some name (no import, no plugin load:
        a module that registers it has been imported already)."""
        with self._lock:
            return any(item is obj for item in self._items.values())

    def names(self) -> list[str]:
        """Every name that :meth:`get` accepts (registered, built-in, or from a plugin)."""
        load_plugins()
        with self._lock:
            return sorted(set(self._items) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={self.names()})"

    def _key(self, name: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise RegistryError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        return name.strip().lower()


def _describe(obj: object) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return repr(obj)
