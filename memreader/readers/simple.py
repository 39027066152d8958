"""The simple structured reader: normalise, parse, window, then fast items (fine mode follows)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memreader.config import SimpleStructMemReaderConfig
from memreader.emit import make_item, memory_type_for, scene_digest, window_sources
from memreader.errors import InputError, LLMRequiredError, UnsupportedModeError
from memreader.items import TextualMemoryItem
from memreader.parsers import scene_units
from memreader.readers.base import BaseMemReader, register_reader
from memreader.scene import Scene, normalize_chat, normalize_doc, validate_info
from memreader.tokens import get_tokenizer
from memreader.windows import Unit, Window, Windower

if TYPE_CHECKING:
    from memreader.embedders import Embedder

logger = logging.getLogger(__name__)

SCENE_TYPES = ("chat", "doc")
MODES = ("fast", "fine")


@dataclass(frozen=True)
class WindowedScene:
    """A scene, its units and the windows cut over them.

    ``digest`` identifies the scene by content, so item ids do not depend on how scenes were
    batched into calls: re-ingesting a scene gives the same ids wherever it stands.
    """

    scene: Scene
    units: list[Unit]
    windows: list[Window]
    digest: str


@register_reader("simple_struct")
class SimpleStructMemReader(BaseMemReader):
    """Reads chats and documents into memory items.

    >>> reader = SimpleStructMemReader()                       # doctest: +SKIP
    >>> reader.get_memory([[{"role": "user", "content": "I love tea"}]],
    ...                   type="chat", info={"user_id": "u1", "session_id": "s1"})  # doctest: +SKIP
    [[TextualMemoryItem(...)]]
    """

    config_class = SimpleStructMemReaderConfig

    def __init__(
        self, config: SimpleStructMemReaderConfig | None = None, *, embedder: Embedder | None = None
    ) -> None:
        self.config = config or SimpleStructMemReaderConfig()
        window = self.config.window
        self.windower = Windower(
            window.max_tokens, window.overlap_tokens, get_tokenizer(window.tokenizer)
        )
        self._embedder = embedder
        self._embedder_lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The embedder, built on first use (loading a local model takes seconds)."""
        if self._embedder is None:
            from memreader.embedders import CachedEmbedder, EmbeddingCache, build_embedder

            with self._embedder_lock:
                if self._embedder is None:
                    inner = build_embedder(self.config.embedder)
                    cache = EmbeddingCache(max_entries=self.config.embedding_cache_size)
                    self._embedder = CachedEmbedder(inner, cache)
        return self._embedder

    # -- steps ------------------------------------------------------------------------------

    def normalize(self, scene_data: Any, type: str) -> list[Scene]:
        """Step 1: the caller's input as typed scenes."""
        if type == "chat":
            return normalize_chat(scene_data)
        if type == "doc":
            return normalize_doc(scene_data, allow_local_paths=self.config.allow_local_paths)
        raise UnsupportedModeError(f"unknown input type {type!r}; expected one of {SCENE_TYPES}")

    def window(self, scenes: Sequence[Scene]) -> list[WindowedScene]:
        """Steps 2 and 3: parse each scene into units and cut them into windows."""
        out = []
        for scene in scenes:
            units = scene_units(scene)
            digest = scene_digest(scene.type, units)
            out.append(WindowedScene(scene, units, self.windower.windows(units), digest))
        return out

    def fast_items(
        self, windowed: Sequence[WindowedScene], info: Mapping[str, Any], custom_tags: Sequence[str]
    ) -> list[list[TextualMemoryItem]]:
        """Fast extraction: each window becomes one item, all embedded in one batched call."""
        tags = ["mode:fast", *custom_tags]
        texts = [w.text for ws in windowed for w in ws.windows]
        vectors = iter(self.embedder.embed(texts)) if texts else iter(())
        result = []
        for ws in windowed:
            items = []
            for window in ws.windows:
                sources = window_sources(window, ws.units, ws.scene)
                items.append(
                    make_item(
                        memory=window.text,
                        info=info,
                        sources=sources,
                        memory_type=memory_type_for(sources),
                        tags=list(tags),
                        id_parts=(ws.scene.type, "fast", ws.digest, window.index),
                        embedding=next(vectors),
                    )
                )
            result.append(items)
        return result

    # -- public API -------------------------------------------------------------------------

    def get_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: str = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[list[TextualMemoryItem]]:
        """Turn ``scene_data`` into memory items: one inner list per scene, in input order.

        ``info`` must hold string ``user_id`` and ``session_id``; its other keys are kept in
        each item's ``metadata.info``. Items are deterministic: the same input and config give
        the same ids in the same order.
        """
        if kwargs:
            raise TypeError(f"get_memory() got unexpected keyword arguments {sorted(kwargs)}")
        if mode not in MODES:
            raise UnsupportedModeError(f"unknown mode {mode!r}; expected one of {MODES}")
        checked_info = validate_info(info)
        tags = _check_tags(custom_tags)
        if mode == "fine":
            raise LLMRequiredError(
                "fine mode needs an LLM: configure `llm` in the reader config (not yet available "
                "in this version); use mode='fast'"
            )
        scenes = self.normalize(scene_data, type)
        windowed = self.window(scenes)
        logger.debug(
            "%d scenes, %d windows", len(windowed), sum(len(ws.windows) for ws in windowed)
        )
        return self.fast_items(windowed, checked_info, tags)


def _check_tags(custom_tags: Sequence[str] | None) -> list[str]:
    if custom_tags is None:
        return []
    if isinstance(custom_tags, str) or not all(isinstance(t, str) for t in custom_tags):
        raise InputError("custom_tags must be a list of strings")
    return list(custom_tags)
