"""Where to cut long texts: chonkie's RecursiveChunker proposes paragraph, then sentence, then
word boundaries; the windower checks every piece against its budget (see
:class:`memreader.windows.Splitter`).

chonkie is given the tiktoken ``Encoding`` object itself, never a tokenizer name (a name makes
it download). Its chunks carry character offsets; a proposal whose chunks do not tile the text
exactly is not used, and the windower falls back to token cuts.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from memreader.tokens import Tokenizer, get_tokenizer

logger = logging.getLogger(__name__)


class RecursiveSplitter:
    """Cut points from chonkie's RecursiveChunker, one chunker per budget (built on first use:
    importing chonkie takes a second or two).

    >>> splitter = RecursiveSplitter()
    >>> text = "First paragraph. " * 30 + "\\n\\n" + "Second paragraph. " * 30
    >>> text[: splitter(text, 128)[0]].endswith("\\n\\n")
    True
    """

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or get_tokenizer()
        self._chunkers: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _chunker(self, budget: int) -> Any:
        with self._lock:
            chunker = self._chunkers.get(budget)
            if chunker is None:
                from chonkie import RecursiveChunker

                # chonkie wraps a tiktoken Encoding itself; its type hints name only its protocol.
                encoding: Any = self.tokenizer.encoding
                chunker = RecursiveChunker(tokenizer=encoding, chunk_size=budget)
                self._chunkers[budget] = chunker
            return chunker

    def __call__(self, text: str, budget: int) -> list[int]:
        """Ascending piece ends for ``text``; empty when chonkie's chunks do not tile it."""
        chunks = self._chunker(budget).chunk(text)
        ends = []
        position = 0
        for chunk in chunks:
            if (
                chunk.start_index != position
                or text[chunk.start_index : chunk.end_index] != chunk.text
            ):
                logger.debug("chonkie's chunks do not tile the text; cutting by tokens")
                return []
            position = chunk.end_index
            ends.append(position)
        return ends if position == len(text) else []
