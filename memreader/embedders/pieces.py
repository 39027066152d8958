"""Long texts cut at token boundaries, and the pieces' vectors pooled back into one.

Every embedding model reads at most ``max_input_tokens`` tokens; servers and
sentence-transformers cut longer inputs without a word. :func:`split_by_tokens` cuts a text
into exact substrings that each fit (never inside a character), and :func:`weighted_mean` pools
their vectors, weighted by each piece's token count (see
:class:`~memreader.embedders.base.PoolingEmbedder`).

>>> weighted_mean([[1.0, 0.0], [0.0, 1.0]], [3, 1], normalize=False)
[0.75, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

from memreader.errors import EmbeddingError

__all__ = [
    "TextPiece",
    "TokenCuts",
    "TokenSpan",
    "plan_token_spans",
    "split_by_tokens",
    "weighted_mean",
]


class TextPiece(NamedTuple):
    """A piece of a long text: ``text == source[start:end]`` and its token count."""

    text: str
    start: int
    end: int
    tokens: int


TokenCuts = Callable[[str], Sequence[int | None]]
"""Tokenizes a text; item ``k`` is the character offset at which the text may be cut just before
token ``k``, or ``None`` where that is not allowed (item 0 is ignored). The list has one item per
token."""


def _is_soft_cut(text: str, pos: int) -> bool:
    return pos >= len(text) or text[pos - 1].isspace() or text[pos].isspace()


def _choose_cut(
    text: str, cuts: Sequence[int | None], first: int, last: int, start: int
) -> int | None:
    """Best token index ``j`` in ``(first, last]`` to end a piece at, or ``None``."""
    n = len(cuts)

    def position(k: int) -> int | None:
        if k == n:
            return len(text)
        pos = cuts[k]
        return pos if pos is not None and pos > start else None

    soft_floor = first + max(1, (last - first) // 2)
    for k in range(last, soft_floor - 1, -1):
        pos = position(k)
        if pos is not None and _is_soft_cut(text, pos):
            return k
    for k in range(last, first, -1):
        if position(k) is not None:
            return k
    return None


class TokenSpan(NamedTuple):
    """Tokens ``first:last`` of a tokenised text, covering its characters ``start:end``."""

    first: int
    last: int
    start: int
    end: int


def plan_token_spans(text: str, cuts: Sequence[int | None], budget: int) -> list[TokenSpan]:
    """Cut a tokenised ``text`` into contiguous spans of at most ``budget`` tokens.

    ``cuts`` is the text's :data:`TokenCuts`. The spans cover the tokens and the characters of
    ``text`` exactly once, in order (the first starts at 0, the last ends at ``len(text)``),
    and no cut falls where ``cuts`` forbids it; the pieces are slices of the one tokenisation,
    so nothing is tokenised twice. Raises :class:`EmbeddingError` where no allowed cut fits.

    >>> plan_token_spans("ab cd ef", [0, 3, 6], 2)
    [TokenSpan(first=0, last=2, start=0, end=6), TokenSpan(first=2, last=3, start=6, end=8)]
    """
    if budget < 1:
        raise ValueError(f"token budget must be at least 1, got {budget}")
    n = len(cuts)
    if n <= budget:
        return [TokenSpan(0, n, 0, len(text))]
    spans: list[TokenSpan] = []
    first, start = 0, 0
    while first < n:
        last = min(first + budget, n)
        j = _choose_cut(text, cuts, first, last, start)
        if j is None:
            raise EmbeddingError(
                f"cannot split a text of {n} tokens into pieces of at most {budget} tokens "
                f"at character boundaries (stuck at character {start})"
            )
        end = len(text) if j == n else cast(int, cuts[j])
        spans.append(TokenSpan(first, j, start, end))
        first, start = j, end
    return spans


def split_by_tokens(
    text: str, budget: int, token_cuts: TokenCuts, count_tokens: Callable[[str], int]
) -> list[TextPiece]:
    """Cut ``text`` into contiguous pieces of at most ``budget`` tokens each.

    The pieces are exact substrings that concatenate back to ``text``; each one's ``tokens`` is
    ``count_tokens(piece.text)``, which never exceeds ``budget``. A text within the budget comes
    back as one piece. Raises :class:`EmbeddingError` if no cut at a character boundary fits
    (only possible with a budget of a few tokens).
    """
    if budget < 1:
        raise ValueError(f"token budget must be at least 1, got {budget}")
    cuts = token_cuts(text)
    n = len(cuts)
    if n <= budget:
        return [TextPiece(text, 0, len(text), n)]
    pieces: list[TextPiece] = []
    first, start = 0, 0
    while first < n:
        last = min(first + budget, n)
        while True:
            j = _choose_cut(text, cuts, first, last, start) if last > first else None
            if j is None:
                raise EmbeddingError(
                    f"cannot split a text of {n} tokens into pieces of at most {budget} tokens "
                    f"at character boundaries (stuck at character {start})"
                )
            end = len(text) if j == n else cast(int, cuts[j])
            piece = text[start:end]
            count = count_tokens(piece)
            if count <= budget:
                break
            # Re-tokenizing the piece on its own gave more tokens than the slice had: shorten.
            last = j - max(1, count - budget)
        pieces.append(TextPiece(piece, start, end, count))
        first, start = j, end
    return pieces


def weighted_mean(
    vectors: Sequence[Sequence[float]], weights: Sequence[float], normalize: bool
) -> list[float]:
    """Weighted mean of ``vectors`` (all weights zero: plain mean), unit length if ``normalize``."""
    if not vectors or len(vectors) != len(weights):
        raise ValueError("need one weight per vector and at least one vector")
    total = math.fsum(weights)
    if total <= 0:
        weights = [1.0] * len(vectors)
        total = float(len(vectors))
    mean = [
        math.fsum(w * x for w, x in zip(weights, column, strict=True)) / total
        for column in zip(*vectors, strict=True)
    ]
    if normalize:
        norm = math.sqrt(math.fsum(x * x for x in mean))
        if norm > 0:
            mean = [x / norm for x in mean]
    return mean
