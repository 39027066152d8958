"""MemOS's call shapes over a memreader reader: :class:`MemOSReader`.

It takes the calls as MemOS's readers take them, turns them into memreader's, and runs the
reader unchanged:

- ``get_memory(scene_data, type, info, mode="fine", user_name=None, **kwargs)``:
  ``info["custom_tags"]`` becomes the ``custom_tags`` of the prompt; ``info["chunk_size"]`` and
  ``info["chunk_overlap"]`` set the call's window (``topic_chunk_size`` and
  ``topic_chunk_overlap`` set it for chats, before those); ``user_context`` (MemOS's
  ``UserContext`` or a mapping) puts its ``manager_user_id`` and ``project_id`` into each item's
  ``info``; ``report`` and ``deadline`` are memreader's own; any other keyword is accepted and
  logged once as unused. ``user_name`` (MemOS scopes its graph recall by it) is unused: a store
  keeps memories by ``info["user_id"]``.
- ``fine_transfer_simple_mem(input_memories, type, custom_tags=None, **kwargs)``: memreader items,
  MemOS items or their dicts (:mod:`memreader.memos.items_in`).
- ``set_graph_db``: a store URL (``sqlite:///...``, ``postgresql://...``) becomes the reader's
  ``store`` (the one ``dedup`` and ``reconcile`` look memories up in); any other object (a MemOS
  graph DB) is kept as ``graph_db`` and unused. ``set_searcher``: kept as ``searcher``, unused.

MemOS's defaults apply unless :class:`CallDefaults` says otherwise: ``mode="fine"``, and fast
items get MemOS's ``key`` (the first sentence of the text, at most 80 characters) and
``confidence`` 0.99. Everything else (``aget_memory``, ``pipeline``, ``close``...) is the
reader's own, reached through this object.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from memreader.config import BaseReaderConfig, WindowConfig
from memreader.errors import ConfigError, InputError, MemOSConfigError
from memreader.items import TextualMemoryItem
from memreader.modes import ReadMode
from memreader.readers import BaseMemReader
from memreader.stores import STORES

__all__ = ["MEMOS_CALL_DEFAULTS", "MEMREADER_CALL_DEFAULTS", "CallDefaults", "MemOSReader"]

logger = logging.getLogger("memreader.memos")

#: ``info`` keys that set the call's window: MemOS name -> (window setting, scene types).
_WINDOW_KEYS = {
    "topic_chunk_size": ("max_tokens", ("chat",)),
    "topic_chunk_overlap": ("overlap_tokens", ("chat",)),
    "chunk_size": ("max_tokens", ("chat", "doc")),
    "chunk_overlap": ("overlap_tokens", ("chat", "doc")),
}
_MEMREADER_KEYWORDS = ("report", "deadline")
_CONTEXT_FIELDS = ("manager_user_id", "project_id")
_SENTENCE_END = re.compile(r"[。！？!?]\s*|\n")


@dataclass(frozen=True)
class CallDefaults:
    """What a call does when it does not say: ``mode``, and whether fast items get a ``key``
    (MemOS's: the first sentence, at most ``key_chars`` characters) and which ``confidence``
    (``None``: none)."""

    mode: ReadMode = "fine"
    fast_key: bool = True
    fast_confidence: float | None = 0.99
    key_chars: int = 80


#: MemOS's: fine mode, fast items with a key and confidence 0.99.
MEMOS_CALL_DEFAULTS = CallDefaults()
#: memreader's own: fast mode, fast items as the reader makes them.
MEMREADER_CALL_DEFAULTS = CallDefaults(mode="fast", fast_key=False, fast_confidence=None)


class MemOSReader:
    """A memreader reader called as MemOS's ``MemReader`` is (see the module docstring)."""

    def __init__(
        self,
        reader: BaseMemReader,
        *,
        defaults: CallDefaults = MEMOS_CALL_DEFAULTS,
        graph_db: Any = None,
        searcher: Any = None,
    ) -> None:
        self._reader = reader
        self._siblings: dict[tuple[int, int], BaseMemReader] = {}
        self._unused_said: set[str] = set()
        self.defaults = defaults
        self.graph_db: Any = None
        self.searcher: Any = None
        self.set_graph_db(graph_db)
        self.set_searcher(searcher)

    @property
    def reader(self) -> BaseMemReader:
        """The memreader reader the calls run on."""
        return self._reader

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class lacks: the reader's own API (aget_memory, pipeline,
        # config, close...).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._reader, name)

    def set_graph_db(self, graph_db: Any) -> None:
        """A store URL becomes the reader's ``store``; anything else is kept, unused.

        Raises:
            MemOSConfigError: a string that is not a store URL (``sqlite:///memories.db``,
                ``postgresql://...``): read as one, it would fail at the first write.
        """
        if isinstance(graph_db, str):
            _check_store_url(graph_db)
        self.graph_db = graph_db
        if isinstance(graph_db, str):
            config = self._reader.config.model_copy(update={"store": SecretStr(graph_db)})
            self._reader = self._sibling(config)
            self._siblings.clear()
        elif graph_db is not None:
            self._say_unused("graph_db", "only a store URL is used (as the reader's store)")

    def set_searcher(self, searcher: Any) -> None:
        """Kept as ``searcher``; memreader's reader searches nothing while it reads."""
        self.searcher = searcher
        if searcher is not None:
            self._say_unused("searcher", "memreader's reader searches nothing while it reads")

    def get_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: ReadMode | None = None,
        user_name: str | None = None,
        **kwargs: Any,
    ) -> list[list[TextualMemoryItem]]:
        """MemOS's ``get_memory``: one list of items per scene (see the module docstring)."""
        mode = mode if mode is not None else self.defaults.mode
        if user_name is not None:
            self._say_unused("user_name", "a store keeps memories by info['user_id']")
        own = {k: kwargs.pop(k) for k in _MEMREADER_KEYWORDS if k in kwargs}
        tags = _tags(kwargs.pop("custom_tags", None), "custom_tags")
        context = _context_fields(kwargs.pop("user_context", None))
        reader = self._reader
        if isinstance(info, Mapping):
            info = dict(info)
            more = _tags(info.pop("custom_tags", None), "info['custom_tags']")
            tags += [t for t in more if t not in tags]
            info.update(context)
            reader = self._reader_for(_window(info, type))
        self._unused_keywords(kwargs)
        items = reader.get_memory(scene_data, type, info, mode, custom_tags=tags or None, **own)
        if mode == "fast":
            for scene in items:
                for item in scene:
                    self._memos_fast(item)
        return items

    def fine_transfer_simple_mem(
        self,
        input_memories: Sequence[Any],
        type: str = "chat",
        custom_tags: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[list[TextualMemoryItem]]:
        """MemOS's ``fine_transfer_simple_mem``: memreader items, MemOS items or their dicts,
        refined; one list per input item."""
        own = {k: kwargs.pop(k) for k in _MEMREADER_KEYWORDS if k in kwargs}
        context = _context_fields(kwargs.pop("user_context", None))
        if custom_tags is not None:
            custom_tags = _tags(custom_tags, "custom_tags")
        self._unused_keywords(kwargs)
        items = (
            [_plain(item) for item in input_memories]
            if _is_list(input_memories)
            else input_memories
        )
        refined = self._reader.fine_transfer_simple_mem(items, type, custom_tags=custom_tags, **own)
        for group in refined:
            for item in group:
                item.metadata.info.update(context)
        return refined

    def _memos_fast(self, item: TextualMemoryItem) -> None:
        """MemOS's fast-item fields, where the defaults ask for them and the item has none."""
        meta = item.metadata
        if self.defaults.fast_key and meta.key is None:
            first = _SENTENCE_END.split(item.memory.strip(), maxsplit=1)[0]
            meta.key = first[: self.defaults.key_chars].strip()
        if self.defaults.fast_confidence is not None and meta.confidence is None:
            meta.confidence = self.defaults.fast_confidence

    def _reader_for(self, window: dict[str, int]) -> BaseMemReader:
        """The reader for a call whose window ``info`` changed (built once per window)."""
        if not window:
            return self._reader
        current = self._reader.config.window
        try:
            chosen = WindowConfig(**(current.model_dump() | window))
        except ConfigError as exc:  # the caller's info asked for it: say so
            asked = ", ".join(f"{k}={v!r:.40}" for k, v in window.items())
            raise ConfigError(f"the window the call's info asks for ({asked}): {exc}") from None
        key = (chosen.max_tokens, chosen.overlap_tokens)
        if key == (current.max_tokens, current.overlap_tokens):
            return self._reader
        reader = self._siblings.pop(key, None)
        if reader is None:
            config = self._reader.config.model_copy(update={"window": chosen})
            reader = self._sibling(config)
        self._siblings[key] = reader  # the most recently used last
        while len(self._siblings) > MAX_WINDOW_READERS:  # windows come from each call's info
            self._siblings.pop(next(iter(self._siblings)))
        return reader

    def _sibling(self, config: BaseReaderConfig) -> BaseMemReader:
        """A reader like this one with ``config``: the same embedder and hooks."""
        base = self._reader
        return type(base)(
            config, embedder=base.embedder, hooks=base.hooks, step_hooks=base.step_hooks
        )

    def _unused_keywords(self, kwargs: Mapping[str, Any]) -> None:
        for name in kwargs:
            self._say_unused(name, "a keyword MemOS's readers take that memreader has no use for")

    def _say_unused(self, name: str, why: str) -> None:
        """Log once per reader that ``name`` was accepted and is unused, and why."""
        if name not in self._unused_said:
            self._unused_said.add(name)
            logger.warning("MemOS argument %s accepted and unused: %s", name, why)


#: The most readers kept for windows a call's ``info`` asked for (the least recently used goes:
#: a caller sending a new ``chunk_size`` with every call must not grow the reader without end).
MAX_WINDOW_READERS = 8


def _window(info: dict[str, Any], type: str) -> dict[str, int]:
    """The window settings the call's ``info`` asks for (those keys taken out of ``info``)."""
    window: dict[str, int] = {}
    for key, (setting, types) in _WINDOW_KEYS.items():
        value = info.pop(key, None)
        if value is not None and type in types:
            window.setdefault(setting, value)
    return window


def _context_fields(context: Any) -> dict[str, Any]:
    """``manager_user_id`` and ``project_id`` of a MemOS ``UserContext`` (or mapping).

    Raises:
        InputError: ``context`` is neither (a number, a string...), or one of the two is not
            a string.
    """
    if context is None:
        return {}
    if isinstance(context, str | bytes | int | float | Sequence) or not (
        isinstance(context, Mapping) or hasattr(context, "__dict__")
    ):
        raise InputError(
            f"user_context must be a MemOS UserContext or a mapping, got {type(context).__name__}"
        )
    found: dict[str, Any] = {}
    for name in _CONTEXT_FIELDS:
        value = context.get(name) if isinstance(context, Mapping) else getattr(context, name, None)
        if value is not None and not isinstance(value, str):
            raise InputError(f"user_context.{name} must be a string, got {type(value).__name__}")
        if value:
            found[name] = value
    return found


def _tags(value: Any, where: str) -> list[str]:
    """``custom_tags`` as a list (``None``: none).

    Raises:
        InputError: not a list of strings (a single string would be read letter by letter).
    """
    if value is None:
        return []
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InputError(f"{where} must be a list of strings, got {type(value).__name__}")
    if not all(isinstance(tag, str) for tag in value):
        raise InputError(f"{where} must be a list of strings")
    return list(value)


def _check_store_url(url: str) -> None:
    """Refuse a ``graph_db`` string that no memory store opens."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in STORES.names() or not rest:
        raise MemOSConfigError(
            f"graph_db {url[:80]!r} is not a store URL: give sqlite:///memories.db or a "
            f"postgresql:// URL ({', '.join(STORES.names())}), or a MemOS graph DB object"
        )


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _plain(item: Any) -> Any:
    """A MemOS item object as its dict (memreader items and mappings as they are)."""
    if isinstance(item, TextualMemoryItem | Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return item
