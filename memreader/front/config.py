"""Which reader config and which store a :class:`~memreader.front.memory.Memory` runs with:
``config`` (a YAML path, a dict or a :class:`~memreader.MemReaderConfigFactory`) with its
``store`` set to the store used (``Memory(store=...)``, else the config's ``store:``, else
``memories.db`` in the data folder of :mod:`memreader.front.home`).

>>> factory, url = reader_config({"config": {"embedder": {"backend": "hash"}}}, "sqlite://:memory:")
>>> url, factory.config.store.get_secret_value()
('sqlite://:memory:', 'sqlite://:memory:')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from memreader.errors import InputError
from memreader.factory import MemReaderConfigFactory
from memreader.front.home import data_home, default_store_url

__all__ = ["MEMORY_KEYS", "ConfigLike", "memory_arguments", "reader_config"]

#: What ``Memory(config)`` takes.
ConfigLike = str | os.PathLike[str] | Mapping[str, Any] | MemReaderConfigFactory | None


def reader_config(config: ConfigLike, store: str | None) -> tuple[MemReaderConfigFactory, str]:
    """The reader config ``config`` names, with its ``store`` set to the store URL used
    (``store``, else the config's, else :func:`~memreader.front.home.default_store_url`); and
    that URL. A relative SQLite file in a YAML config is relative to the YAML's folder. The
    store is set before the config is validated, so ``fine.passes: [..., reconcile]`` (which
    needs one) works without a ``store:`` line.

    Raises:
        ConfigError: the config is invalid (the message names the field).
        InputError: ``config`` or ``store`` is of the wrong type.
    """
    from memreader.config_files import read_yaml_config
    from memreader.stores.urls import resolve_store_url

    if store is not None and not isinstance(store, str):
        raise InputError(f"Memory(store=...) must be a URL string, got {type(store).__name__}")
    base_dir = os.getcwd()
    if isinstance(config, MemReaderConfigFactory):
        factory = config
    else:
        if config is None:
            raw: dict[str, Any] = {}
        elif isinstance(config, (str, os.PathLike)):
            raw = read_yaml_config(config)
            base_dir = str(Path(config).resolve().parent)
        elif isinstance(config, Mapping):
            raw = dict(config)
        else:
            raise InputError(
                f"Memory(config) takes a YAML path, a dict or a MemReaderConfigFactory, "
                f"got {type(config).__name__}"
            )
        factory = MemReaderConfigFactory.from_dict(_with_store(raw, store))
    if store is not None:
        url = resolve_store_url(store, os.getcwd())
    elif factory.config.store is not None:
        url = resolve_store_url(factory.config.store.get_secret_value(), base_dir)
    else:
        url = default_store_url()
    if url == default_store_url():
        data_home().mkdir(parents=True, exist_ok=True)
    # The reader's own steps (dedup, reconcile) then see the store this object writes to.
    settings = factory.config.model_copy(update={"store": SecretStr(url)})
    return MemReaderConfigFactory(backend=factory.backend, config=settings), url


#: The keys of a flat config that are :class:`~memreader.front.memory.Memory`'s own arguments
#: (``backend`` is the reader's; every other key is a field of the reader's config).
MEMORY_KEYS = frozenset({"store", "store_options", "working_memory"})


def memory_arguments(config: ConfigLike) -> tuple[ConfigLike, dict[str, Any]]:
    """``Memory.from_config``'s ``config`` as ``Memory``'s arguments: a flat dict, as mem0
    users write one (``{"store": ..., "embedder": ..., "llm": ..., "lifecycle": ...}``:
    :data:`MEMORY_KEYS` go to ``Memory``, ``backend`` names the reader, every other key is a
    field of its config), becomes the reader config and the keyword arguments; any other shape
    (a YAML path, ``{"backend": ..., "config": {...}}``, a factory) is the reader config as is.

    >>> memory_arguments({"store": "sqlite://:memory:", "embedder": {"backend": "hash"}})
    ({'config': {'embedder': {'backend': 'hash'}}}, {'store': 'sqlite://:memory:'})

    Raises:
        InputError: a key that is not a string.
    """
    if not isinstance(config, Mapping) or "config" in config:
        return config, {}
    odd = [key for key in config if not isinstance(key, str)]
    if odd:
        raise InputError(f"Memory.from_config: a config key must be a string, got {odd[0]!r}")
    arguments = {key: value for key, value in config.items() if key in MEMORY_KEYS}
    settings = {k: v for k, v in config.items() if k not in MEMORY_KEYS and k != "backend"}
    nested: dict[str, Any] = {"config": settings}
    if "backend" in config:
        nested["backend"] = config["backend"]
    return nested, arguments


def _with_store(raw: dict[str, Any], store: str | None) -> dict[str, Any]:
    """``raw`` (a reader config as YAML holds it) with ``config.store`` set: ``store`` when
    given, else the default store when the config names none."""
    inner = raw.get("config")
    if inner is None:
        inner = {}
    if not isinstance(inner, Mapping):
        return raw  # validation says what is wrong with it
    inner = dict(inner)
    if store is not None:
        inner["store"] = store
    elif inner.get("store") is None:
        inner["store"] = default_store_url()
    return {**raw, "config": inner}
