"""What a reader's steps share: its config, the windower, the embedder, the LLM router and the
hooks. Costly parts (the embedding model, LLM clients) are built on first use, once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from memreader.documents.chunking import RecursiveSplitter
from memreader.errors import ConfigError, LLMRequiredError
from memreader.llms.hooks import LLMHooks
from memreader.pipeline.hooks import StepHooks
from memreader.tokens import get_tokenizer
from memreader.windows import Windower

if TYPE_CHECKING:
    from memreader.config import BaseReaderConfig
    from memreader.embedders import Embedder
    from memreader.extraction.language import Language
    from memreader.llms import LLMRouter

__all__ = ["ReaderRuntime"]

T = TypeVar("T")


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
        embedder: Embedder | None = None,
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
        self._embedder = embedder
        self._router: LLMRouter | None = None
        self._lock = threading.Lock()
        self._shared: dict[str, Any] = {}

    @property
    def embeds(self) -> bool:
        """Whether items get vectors (``embedder: null`` turns it off)."""
        return self._embedder is not None or self.config.embedder is not None

    @property
    def embedder(self) -> Embedder:
        """The embedder, built on first use (loading a local model takes seconds)."""
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

    @property
    def llm(self) -> LLMRouter:
        """The LLM slots' clients: one concurrency budget, one usage meter, one set of hooks."""
        if self._router is None:
            from memreader.llms import LLMRouter

            slots = self.config.llm_slots()
            if slots.resolve("llm") is None:
                raise LLMRequiredError(
                    "fine mode needs an LLM: set `llm` in the reader config "
                    "(see configs/fine_openai.yaml), or use mode='fast'"
                )
            with self._lock:
                if self._router is None:
                    self._router = LLMRouter(slots, hooks=self.hooks)
        return self._router

    def shared(self, name: str, build: Callable[[], T]) -> T:
        """The reader's part ``name``, built by ``build()`` on first use and kept (a fetcher, a
        transcriber, a content cache: what a reader's own steps share across calls). A part
        with a ``close()`` method is closed with the reader."""
        with self._lock:
            if name not in self._shared:
                self._shared[name] = build()
            return self._shared[name]  # type: ignore[no-any-return]

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
        for part in parts:
            close = getattr(part, "close", None)
            if callable(close):
                close()
