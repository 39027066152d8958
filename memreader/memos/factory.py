"""MemOS's factories, for a MemOS user's import lines: :class:`MemReaderConfigFactory` (which
takes MemOS's reader configs, from dicts, YAML and JSON) and :class:`MemReaderFactory` (whose
``from_config(config, graph_db=None, searcher=None)`` gives a :class:`MemOSReader`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import PrivateAttr
from typing_extensions import Self

from memreader import factory as core
from memreader.config_files import read_yaml_config
from memreader.memos.config_shapes import looks_like_memos_config, translate_reader_config
from memreader.memos.reader import MEMOS_CALL_DEFAULTS, CallDefaults, MemOSReader
from memreader.memos.translation import Translation
from memreader.readers import READERS

__all__ = ["MemReaderConfigFactory", "MemReaderFactory"]


class MemReaderConfigFactory(core.MemReaderConfigFactory):
    """memreader's reader config factory that also takes MemOS's reader configs; what each
    MemOS setting became is :attr:`translation` (also logged once). A memreader config is
    taken as it is (its translation is empty).

    >>> cfg = MemReaderConfigFactory.model_validate({"backend": "simple_struct", "config": {
    ...     "llm": {"backend": "ollama", "config": {"model_name_or_path": "qwen3:8b"}},
    ...     "embedder": {"backend": "sentence_transformer",
    ...                  "config": {"model_name_or_path": "all-MiniLM-L6-v2"}},
    ...     "chunker": {"backend": "sentence", "config": {"chunk_size": 512}}}})
    >>> cfg.config.llm.backend, cfg.config.embedder.backend, cfg.config.window.max_tokens
    ('ollama', 'local', 512)
    """

    _translation: Translation = PrivateAttr(default_factory=Translation)

    def __init__(self, **data: Any) -> None:
        translation = Translation()
        raw = data.get("config")
        backend = data.get("backend", "simple_struct")
        if isinstance(raw, Mapping) and looks_like_memos_config(raw) and backend in READERS:
            fields = READERS.get(backend).config_class.model_fields
            translation = translate_reader_config(raw, fields=fields)
            translation.log()
            data = {**data, "config": translation.config}
        super().__init__(**data)
        self._translation = translation

    @property
    def translation(self) -> Translation:
        """What each MemOS setting became (``str()`` of it is the readable report)."""
        return self._translation

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate a mapping (MemOS's or memreader's) as :class:`MemReaderConfigFactory`."""
        if isinstance(obj, Mapping) and not args and not kwargs:
            return cls(**obj)
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def from_yaml_file(cls, yaml_path: str | os.PathLike[str]) -> Self:
        """MemOS's name for :meth:`from_yaml` (``${ENV}`` references interpolated)."""
        made = cls.from_dict(read_yaml_config(yaml_path))
        assert isinstance(made, cls)  # from_dict builds cls
        return made

    @classmethod
    def from_json_file(cls, json_path: str | os.PathLike[str]) -> Self:
        """A config from a JSON file (read with the YAML loader's limits: JSON is YAML)."""
        return cls.from_yaml_file(json_path)


class MemReaderFactory:
    """MemOS's ``MemReaderFactory``: readers from configs, with MemOS's call shapes."""

    @classmethod
    def from_config(
        cls,
        config_factory: core.MemReaderConfigFactory | Mapping[str, Any],
        graph_db: Any = None,
        searcher: Any = None,
        *,
        defaults: CallDefaults = MEMOS_CALL_DEFAULTS,
    ) -> MemOSReader:
        """A :class:`MemOSReader` on the (cached) reader for ``config_factory``; ``graph_db``
        and ``searcher`` as :meth:`MemOSReader.set_graph_db` and ``set_searcher`` take them;
        ``defaults``: MemOS's (fine mode...) unless told otherwise."""
        if isinstance(config_factory, Mapping):
            config_factory = MemReaderConfigFactory(**config_factory)
        reader = core.MemReaderFactory.from_config(config_factory)
        return MemOSReader(reader, defaults=defaults, graph_db=graph_db, searcher=searcher)
