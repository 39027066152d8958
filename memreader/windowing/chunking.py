"""Where to cut long texts: chonkie's RecursiveChunker proposes paragraph, then sentence, then
word boundaries; the windower checks every piece against its budget (see
:class:`memreader.windowing.windows.Splitter`).

chonkie is given a tokenizer object of ours over the offline tiktoken ``Encoding``, never a
tokenizer name (a name makes it download), and never the bare ``Encoding``: its ``encode``
refuses special-token text such as ``<|endoftext|>``, which in our input is ordinary text. Its
chunks carry character offsets; a proposal whose chunks do not tile the text exactly is not
used, and the windower falls back to token cuts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from memreader.windowing.tokens import Tokenizer, get_tokenizer

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _ordinary_tokenizer_class() -> type[Any]:
    """chonkie's tokenizer adapter with every encoding call ordinary (built on first use, as
    importing chonkie is slow). chonkie takes an ``AutoTokenizer`` instance as it is."""
    from chonkie.tokenizer import AutoTokenizer

    class OrdinaryTiktoken(AutoTokenizer):
        """A tiktoken ``Encoding`` for which special-token text is ordinary text."""

        _backend = "tiktoken"

        def encode(self, text: str) -> Sequence[int]:
            return self.tokenizer.encode_ordinary(text)  # type: ignore[no-any-return]

        def count_tokens(self, text: str) -> int:
            return len(self.tokenizer.encode_ordinary(text))

        def encode_batch(self, texts: Sequence[str]) -> Sequence[Sequence[int]]:
            return self.tokenizer.encode_ordinary_batch(list(texts))  # type: ignore[no-any-return]

        def count_tokens_batch(self, texts: Sequence[str]) -> Sequence[int]:
            return [len(ids) for ids in self.encode_batch(texts)]

    return OrdinaryTiktoken


def ordinary_tokenizer(tokenizer: Tokenizer) -> Any:
    """A chonkie tokenizer over ``tokenizer``'s encoding that never refuses special-token text.

    >>> chonkie_tokenizer = ordinary_tokenizer(get_tokenizer())
    >>> chonkie_tokenizer.count_tokens("<|endoftext|>") == get_tokenizer().count("<|endoftext|>")
    True
    """
    return _ordinary_tokenizer_class()(tokenizer.encoding)


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

                chunker = RecursiveChunker(
                    tokenizer=ordinary_tokenizer(self.tokenizer), chunk_size=budget
                )
                self._chunkers[budget] = chunker
            return chunker

    def __call__(self, text: str, budget: int) -> list[int]:
        """Ascending piece ends for ``text``; empty when chonkie's chunks do not tile it."""
        try:
            chunks = self._chunker(budget).chunk(text)
        except UnicodeEncodeError:
            # chonkie splits UTF-8 bytes; a lone surrogate (normalisation refuses them, but a
            # Windower may be used directly) cannot be encoded. Token cuts handle any text.
            logger.debug("text is not encodable as UTF-8; cutting by tokens")
            return []
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
