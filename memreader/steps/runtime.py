"""What a reader's built-in steps share: its config, the windower, the embedder, the LLM router,
the memory store (:meth:`ReaderRuntime.store`) and the hooks (the engine carries it as any
:class:`~memreader.pipeline.protocols.StepRuntime`).
Costly parts (the embedding model, LLM clients) are built on first use, once.

A step reads the settings it needs through :meth:`ReaderRuntime.settings`, which narrows the
reader's config to the small settings class the step declares (a reader's config class inherits
it), and keeps its own shared parts under a typed :class:`SharedKey`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memreader.errors import ConfigError, LLMRequiredError
from memreader.llms.hooks import LLMHooks
from memreader.pipeline.hooks import StepHooks
from memreader.windowing.chunking import RecursiveSplitter
from memreader.windowing.tokens import get_tokenizer
from memreader.windowing.windows import Windower

if TYPE_CHECKING:
    from memreader.config import BaseReaderConfig
    from memreader.embedders.base import FullEmbedder
    from memreader.extraction.language import Language
    from memreader.llms import LLMRouter
    from memreader.stores import MemoryStore

__all__ = ["ReaderRuntime", "SharedKey"]

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True, eq=False)
class SharedKey(Generic[T]):
    """A part of a reader that its steps share across calls (a fetcher, a content cache): its
    name, for messages, and how to build it from the runtime. Keys compare by identity, so two
    modules never share a part by choosing the same name.

    >>> COUNTER = SharedKey("counter", lambda runtime: [0])
    """

    name: str
    build: Callable[[ReaderRuntime], T]


class ReaderRuntime:
    """The shared parts of one reader (see the module docstring).

    Args:
        config: the reader's config.
        embedder: an embedder to use instead of building the configured one.
        hooks: callbacks around every LLM call.
        step_hooks: callbacks around every step.
    """

    def __init__(
        self,
        config: BaseReaderConfig,
        *,
        embedder: Any = None,
        hooks: LLMHooks | None = None,
        step_hooks: StepHooks | None = None,
    ) -> None:
        self.config = config
        window = config.window
        tokenizer = get_tokenizer(window.tokenizer)
        splitter = RecursiveSplitter(tokenizer) if window.splitter == "recursive" else None
        self.windower = Windower(window.max_tokens, window.overlap_tokens, tokenizer, splitter)
        self.hooks = hooks if hooks is not None else LLMHooks()
        self.step_hooks = step_hooks if step_hooks is not None else StepHooks()
        self._embedder: FullEmbedder | None = None
        if embedder is not None:
            from memreader.embedders.adapter import with_defaults

            self._embedder = with_defaults(embedder)
        self._router: LLMRouter | None = None
        # Re-entrant: a shared part's build may read the embedder or the LLM router.
        self._lock = threading.RLock()
        self._shared: dict[SharedKey[Any], Any] = {}
        # The store the steps read (dedup, reconcile): handed by its owner (a Memory), or
        # opened from the config's URL on first use and then closed with the reader.
        self._store: MemoryStore | None = None
        self._opened_store = False
        self._advised: set[str] = set()

    @property
    def embeds(self) -> bool:
        """Whether items get vectors (``embedder: null`` turns it off)."""
        return self._embedder is not None or self.config.embedder is not None

    @property
    def embedder(self) -> FullEmbedder:
        """The embedder, built on first use (loading a local model takes seconds); one given
        without the optional abilities gets their defaults (see
        :func:`~memreader.embedders.base.with_defaults`)."""
        if self._embedder is None:
            if self.config.embedder is None:
                raise ConfigError("this reader has no embedder (config `embedder: null`)")
            from memreader.embedders import CachedEmbedder, EmbeddingCache, build_embedder

            with self._lock:
                if self._embedder is None:
                    inner = build_embedder(self.config.embedder)
                    cache = EmbeddingCache(max_entries=self.config.embedding_cache_size)
                    self._embedder = CachedEmbedder(inner, cache)
        return self._embedder

    def store_embedding(self) -> dict[str, Any]:
        """How a store this reader writes to is opened so that search embeds as it embeds:
        ``{"embedder": ...}``, or ``{"text_only": True}`` when its config says
        ``embedder: null`` (text-only on purpose) (the keyword arguments of
        :func:`~memreader.stores.open_store`).

        >>> from memreader.factory import MemReaderConfigFactory
        >>> config = {"config": {"embedder": None}}
        >>> MemReaderConfigFactory.from_dict(config).build().runtime.store_embedding()
        {'text_only': True}
        """
        return {"embedder": self.embedder} if self.embeds else {"text_only": True}

    def use_store(self, store: MemoryStore) -> None:
        """Hand the reader the open ``store`` its steps read (``dedup`` looks items up in it,
        ``reconcile`` searches it): the store its owner writes to, so a step never reopens it
        by URL (a ``sqlite://:memory:`` store reopened would be a second, empty database). The
        owner keeps it and closes it; the reader does not.

        Raises:
            ConfigError: the reader already opened a store of its own from its config.
        """
        with self._lock:
            if self._opened_store:
                raise ConfigError(
                    "this reader already opened its config's store: hand it a store before "
                    "its first read"
                )
            self._store = store

    @property
    def has_store(self) -> bool:
        """Whether the steps have a store: one handed (:meth:`use_store`) or the config's."""
        return self._store is not None or self.config.store is not None

    def store(self) -> MemoryStore | None:
        """The store the reader's steps read: the one handed by :meth:`use_store`, else the
        config's ``store`` URL opened on first use (with :meth:`store_embedding`, so a search
        embeds as the reader does) and closed with the reader; ``None`` without either. This is
        the one place a reader opens a store.

        Raises:
            ConfigError, StoreError: the config's store cannot be opened.
        """
        with self._lock:
            if self._store is None and self.config.store is not None:
                from memreader.stores import open_store

                url = self.config.store.get_secret_value()
                self._store = open_store(url, **self.store_embedding())
                self._opened_store = True
            return self._store

    @property
    def llm(self) -> LLMRouter:
        """The LLM slots' clients: one concurrency budget, one usage meter, one set of hooks."""
        if self._router is None:
            from memreader.llms import LLMRouter

            if self.config.resolve("llm") is None:
                raise LLMRequiredError(
                    "fine mode needs an LLM: set `llm` in the reader config "
                    "(see configs/fine_openai.yaml), or use mode='fast'"
                )
            with self._lock:
                if self._router is None:
                    self._router = LLMRouter(self.config, hooks=self.hooks)
        return self._router

    def shared(self, key: SharedKey[T]) -> T:
        """The reader's part ``key``, built by ``key.build(runtime)`` on first use and kept (a
        fetcher, a transcriber, a content cache: what a reader's steps share across calls). A
        part with a ``close()`` method is closed with the reader."""
        with self._lock:
            if key not in self._shared:
                self._shared[key] = key.build(self)
            part: T = self._shared[key]
            return part

    def settings(self, kind: type[S], step: str) -> S:
        """The reader's config as the settings ``kind`` a step reads, or a :class:`ConfigError`
        naming the step when the reader's config class does not hold them."""
        if isinstance(self.config, kind):
            return self.config
        raise ConfigError(
            f"step {step!r} needs the settings of {kind.__name__}, which "
            f"{type(self.config).__name__} does not have (use a reader whose config has them)"
        )

    def advise(
        self, logger: logging.Logger, key: str, message: str, *args: Any, **extra: Any
    ) -> bool:
        """Log the warning ``message % args`` through ``logger`` the first time ``key`` is
        advised by this reader, and never again: advice a user acts on once (a setting to
        change, such as an embedder that cannot read the text's language) would otherwise be
        repeated by every call of a long-lived reader (a ``Memory``'s ``add()``). What each call
        needs to know stays in its report. ``extra``: the record's extra attributes. Whether it
        was logged now.

        >>> from memreader.factory import MemReaderConfigFactory
        >>> runtime = MemReaderConfigFactory().build().runtime
        >>> log = logging.getLogger("example")
        >>> runtime.advise(log, "tip", "a tip"), runtime.advise(log, "tip", "a tip")
        (True, False)
        """
        with self._lock:
            if key in self._advised:
                return False
            self._advised.add(key)
        logger.warning(message, *args, extra=extra or None)
        return True

    def language(self, text: str) -> Language:
        """The prompt language for ``text`` (``fine.language``, or detected)."""
        from memreader.extraction import detect_language

        language = self.config.fine.language
        return detect_language(text) if language == "auto" else language

    def close(self) -> None:
        """Close the LLM clients' connections and the shared parts that can be closed."""
        if self._router is not None:
            self._router.close()
        self._close_shared()

    async def aclose(self) -> None:
        """Close the LLM clients' connections, the running loop's async ones included."""
        if self._router is not None:
            await self._router.aclose()
        self._close_shared()

    def _close_shared(self) -> None:
        with self._lock:
            parts = list(self._shared.values())
            self._shared.clear()
            if self._opened_store:  # a handed store is its owner's to close
                parts.append(self._store)
                self._store, self._opened_store = None, False
        for part in parts:
            close = getattr(part, "close", None)
            if callable(close):
                close()
