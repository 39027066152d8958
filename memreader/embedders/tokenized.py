"""In-process embedders that own their tokenizer: tokenise once, batch by length, share pieces.

:class:`TokenizedEmbedder` is the base of the ``local`` (ONNX Runtime) and
``sentence_transformers`` backends. Where :class:`~memreader.embedders.base.PoolingEmbedder`
hands text to a backend (which tokenises it again), this class hands the model token ids:

- **Tokenised once.** Each text is tokenised once by the model's own ``tokenizers.Tokenizer``;
  a long text's pieces are slices of those ids (cut at the token offsets, preferring whitespace,
  never inside a character), wrapped in the model's special tokens.
- **Batched by length.** All pieces of a call are sorted by length before batching, so a batch
  pads as little as possible, then put back in order.
- **Shared pieces embedded once.** Identical pieces within a call (the same ids) are embedded
  once. :meth:`TokenizedEmbedder.embed_fragments` goes further: a text given as its fragments
  (say the overlap it shares with the previous window, its own lines, the overlap it shares with the
  next) is cut at the fragment boundaries when it is too long for one piece, so text that two
  windows share becomes the same piece in both and is embedded once. A text's vector is the
  token-weighted mean of its pieces' unit vectors, as in ``PoolingEmbedder``; a text that fits
  the model is embedded whole.
"""

from __future__ import annotations

import logging
import re
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memreader.embedders.base import PoolingEmbedder
from memreader.embedders.languages import unk_token_id, unknown_spans, unreadable_share
from memreader.embedders.model_io import MAX_JSON_BYTES, read_model_bytes
from memreader.embedders.pieces import TextPiece, plan_token_spans
from memreader.errors import EmbeddingError

__all__ = ["TokenizedEmbedder", "load_tokenizer"]

# A run of more than 100 characters without the white space BERT splits at: wordpiece maps a
# word that long to [UNK].
_LONG_ASCII_WORD = re.compile(r"[^ \t\n\r]{101,}")

#: White space that BERT's normaliser keeps as white space (where its pre-tokenizer splits).
_BERT_SPACE = frozenset(" \t\n\r")

#: How many recently embedded pieces a TokenizedEmbedder keeps for reuse.
_RECENT_PIECES = 64
#: How many recently embedded texts' [UNK] spans it keeps (a call's windows, usually).
_RECENT_TEXTS = 256

logger = logging.getLogger(__name__)


def load_tokenizer(path: str) -> Any:
    """A ``tokenizers.Tokenizer`` from a ``tokenizer.json``, truncation and padding off."""
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise EmbeddingError(
            "the local embedders need the `tokenizers` package: pip install 'memreader-ai[local]'"
        ) from e
    data = read_model_bytes(Path(path), MAX_JSON_BYTES)
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as e:  # tokenizers raises a bare Exception for a bad file
        raise EmbeddingError(f"cannot read the tokenizer {path!r}: {e}") from e
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _special_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special ids the tokenizer puts before and after a single text's content."""
    probe = tokenizer.encode("a", add_special_tokens=True)
    plain = tokenizer.encode("a", add_special_tokens=False).ids
    ids = list(probe.ids)
    for i in range(len(ids) - len(plain) + 1):
        if ids[i : i + len(plain)] == plain:
            return ids[:i], ids[i + len(plain) :]
    raise EmbeddingError("cannot tell the tokenizer's special tokens from its content tokens")


def _cuts(offsets: Sequence[tuple[int, int]]) -> list[int | None]:
    cuts: list[int | None] = []
    previous_end = 0
    for k, (start, end) in enumerate(offsets):
        # Tokens that share a character (start < previous end) must stay together.
        cuts.append(start if k > 0 and start >= previous_end else None)
        previous_end = max(previous_end, end)
    return cuts


class TokenizedEmbedder(PoolingEmbedder):
    """Base of in-process embedders fed token ids (see the module docstring).

    Subclasses provide :meth:`_embed_ids`: one forward pass over at most ``batch_size`` id
    sequences (special tokens included), returning a float array of shape
    ``(len(batch), dimension)``.
    """

    #: :meth:`embed_fragments` pools the fragments' own tokens (not their joined text's).
    embeds_fragments = True

    def __init__(
        self,
        *,
        tokenizer: Any,
        name: str,
        max_input_tokens: int,
        batch_size: int,
        normalize: bool,
        dimension: int,
    ) -> None:
        head, tail = _special_ids(tokenizer)
        super().__init__(
            name=name,
            max_input_tokens=max_input_tokens,
            batch_size=batch_size,
            normalize=normalize,
            special_tokens=len(head) + len(tail),
            dimension=dimension,
        )
        self.tokenizer = tokenizer
        self._head, self._tail = head, tail
        self._unknown_id: int | None = unk_token_id(tokenizer)
        # BERT's pre-tokenizer splits at white space, so texts that meet there tokenise apart
        # as they do together (not so for SentencePiece-style "▁word" tokenizers).
        self._joins_at_space = type(tokenizer.pre_tokenizer).__name__ == "BertPreTokenizer"
        # The scripts the model reads (see memreader.embedders.languages); None: not known.
        self.scripts: frozenset[str] | None = None
        self._stats_lock = threading.Lock()
        # The last pieces embedded: consecutive windows embedded in separate calls still share
        # their overlap's piece.
        self._recent: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        # The [UNK] spans of the last texts embedded: unreadable_share on a text just embedded
        # (the embed step checks each window's embedded text) needs no second tokenisation.
        self._recent_unknown: OrderedDict[str, list[tuple[int, int]]] = OrderedDict()
        self.pieces_embedded = 0
        self.pieces_shared = 0
        self.tokens_embedded = 0

    @abstractmethod
    def _embed_ids(self, batch: list[list[int]]) -> Any:
        """Embed id sequences (special tokens included) in one pass: ``(len(batch), dim)``."""

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        """The tokenizer's encodings of ``texts`` (no special tokens); text it cannot take (a
        lone surrogate is not valid Unicode) is an :class:`EmbeddingError` naming the text."""
        try:
            if len(texts) == 1:
                return [self.tokenizer.encode(texts[0], add_special_tokens=False)]
            return list(self.tokenizer.encode_batch(list(texts), add_special_tokens=False))
        except Exception as e:  # tokenizers raises TypeError/Exception for text it refuses
            for i, text in enumerate(texts):
                bad = next((c for c in text if "\ud800" <= c <= "\udfff"), None)
                if bad is not None:
                    which = f"text {i}" if len(texts) > 1 else "the text"
                    raise EmbeddingError(
                        f"{self.name}: {which} holds a lone surrogate {bad!r} at character "
                        f"{text.index(bad)} (not valid Unicode text)"
                    ) from None
            raise EmbeddingError(f"{self.name}: the tokenizer refused the text: {e}") from e

    def unreadable_share(self, text: str) -> float | None:
        """Share of ``text``'s letters this model cannot read, or ``None`` when its scripts are
        not known (see :mod:`memreader.embedders.languages`)."""
        if self.scripts is None:
            return None
        with self._stats_lock:
            remembered = self._recent_unknown.get(text)
        if remembered is not None:
            spans: list[tuple[int, int]] = remembered
        elif text.isascii() and not _LONG_ASCII_WORD.search(text):
            # Pure ASCII with no word over 100 characters: nothing becomes [UNK]. (Anything else
            # is tokenised: an emoji glued to a word makes the whole word [UNK], and the
            # normaliser deletes control characters such as \x1f, joining words.)
            spans = []
        else:
            spans = unknown_spans(self._encode([text])[0], self._unknown_id)
        return unreadable_share(text, unknown_spans=spans, scripts=self.scripts)

    def count_tokens(self, text: str) -> int:
        """Number of content tokens of ``text`` (no special tokens)."""
        return len(self._encode([text])[0].ids)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return _cuts(self._encode([text])[0].offsets)

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        rows: list[list[float]] = self._run([enc.ids for enc in self._encode(texts)]).tolist()
        return rows

    def split_text(self, text: str) -> list[TextPiece]:
        """The pieces ``embed`` embeds for ``text``: slices of its one tokenisation."""
        encoding = self._encode([text])[0]
        spans = plan_token_spans(text, _cuts(encoding.offsets), self.piece_budget)
        return [TextPiece(text[s.start : s.end], s.start, s.end, s.last - s.first) for s in spans]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order (see the module docstring)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        return self.embed_fragments([[text] for text in self._check_texts(texts)])

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text, each text given as its consecutive fragments.

        The vector is that of ``"".join(fragments)``: the text embedded whole when it fits the
        model, otherwise the token-weighted mean of its pieces, which are cut at the fragment
        boundaries (and within fragments too long for one piece). Fragments should meet at
        whitespace (a line break), where the tokenizer would split anyway. Identical pieces in a
        call are embedded once.
        """
        import numpy as np

        plans: list[list[tuple[int, ...]]] = []
        for i, fragments in enumerate(texts):
            if isinstance(fragments, str):
                raise TypeError(
                    f"embed_fragments() takes a list of fragments per text; item {i} is a str"
                )
            self._check_texts(fragments)
            try:
                plans.append(self._plan(list(fragments)))
            except EmbeddingError as e:
                raise EmbeddingError(f"{e} (text {i} of {len(texts)})") from None
        if not plans:
            return []
        distinct: dict[tuple[int, ...], int] = {}
        for plan in plans:
            for piece in plan:
                distinct.setdefault(piece, len(distinct))
        pieces = list(distinct)
        vectors = self._embed_sorted(pieces)
        with self._stats_lock:
            self.pieces_shared += sum(len(plan) for plan in plans) - len(pieces)
        out: list[list[float]] = []
        for plan in plans:
            rows = [distinct[piece] for piece in plan]
            if len(rows) == 1:
                out.append(vectors[rows[0]].tolist())
                continue
            weights = np.array([float(len(piece)) for piece in plan], dtype=np.float64)
            if weights.sum() <= 0:
                weights[:] = 1.0
            mean = (vectors[rows].astype(np.float64) * weights[:, None]).sum(axis=0)
            mean /= weights.sum()
            if self.normalize:
                norm = float(np.linalg.norm(mean))
                if norm > 0:
                    mean /= norm
            out.append(mean.astype(np.float32).tolist())
        return out

    @staticmethod
    def _check_texts(texts: Sequence[Any]) -> list[str]:
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"embed() takes strings; item {i} is {type(text).__name__}")
        return texts

    def _remember_unknown(self, fragments: Sequence[str], encodings: Sequence[Any]) -> None:
        """Keep the [UNK] spans of the text ``fragments`` make (tokenised fragment by fragment) for
        :meth:`unreadable_share`, when the fragments meet where the tokenizer splits anyway."""
        if len(fragments) > 1 and not (
            self._joins_at_space
            and all(fragment[-1:] in _BERT_SPACE for fragment in fragments[:-1])
        ):
            return
        spans: list[tuple[int, int]] = []
        offset = 0
        for fragment, encoding in zip(fragments, encodings, strict=True):
            if self._unknown_id is not None and self._unknown_id in encoding.ids:
                spans.extend(
                    (offset + a, offset + b) for a, b in unknown_spans(encoding, self._unknown_id)
                )
            offset += len(fragment)
        with self._stats_lock:
            self._recent_unknown["".join(fragments)] = spans
            while len(self._recent_unknown) > _RECENT_TEXTS:
                self._recent_unknown.popitem(last=False)

    def _plan(self, fragments: list[str]) -> list[tuple[int, ...]]:
        """The content ids of each piece of one text given as fragments."""
        fragments = [fragment for fragment in fragments if fragment] or [""]
        encodings = self._encode(fragments)
        self._remember_unknown(fragments, encodings)
        budget = self.piece_budget
        if sum(len(enc.ids) for enc in encodings) <= budget:
            if len(fragments) == 1:
                return [tuple(encodings[0].ids)]
            if self._joins_at_space and all(
                fragment[-1] in _BERT_SPACE for fragment in fragments[:-1]
            ):
                # Fragments that meet at white space tokenise as the whole does (the pre-tokenizer
                # splits there): their ids joined are the whole text's ids. Not at every
                # str.isspace() character: BERT's normaliser deletes \x0b, \x0c, \x1c-\x1f
                # and \x85 as control characters, joining the words around them.
                return [tuple(i for enc in encodings for i in enc.ids)]
            return [tuple(self._encode(["".join(fragments)])[0].ids)]
        pieces: list[tuple[int, ...]] = []
        for fragment, enc in zip(fragments, encodings, strict=True):
            ids = enc.ids
            if not ids:
                continue
            for span in plan_token_spans(fragment, _cuts(enc.offsets), budget):
                pieces.append(tuple(ids[span.first : span.last]))
        return pieces or [()]

    def _embed_sorted(self, pieces: list[tuple[int, ...]]) -> Any:
        """Unit (or raw) vectors of ``pieces``, embedded in batches of similar length; pieces
        embedded by one of the last calls are reused."""
        import numpy as np

        result = np.empty((len(pieces), self.dimension), dtype=np.float32)
        todo: list[int] = []
        with self._stats_lock:
            for k, piece in enumerate(pieces):
                vector = self._recent.get(piece)
                if vector is None:
                    todo.append(k)
                else:
                    result[k] = vector
        todo.sort(key=lambda k: len(pieces[k]))
        for offset in range(0, len(todo), self.batch_size):
            rows = todo[offset : offset + self.batch_size]
            result[rows] = self._run([[*self._head, *pieces[k], *self._tail] for k in rows])
        with self._stats_lock:
            self.pieces_embedded += len(todo)
            self.pieces_shared += len(pieces) - len(todo)
            self.tokens_embedded += sum(len(pieces[k]) + self.special_tokens for k in todo)
            for k in todo:
                self._recent[pieces[k]] = result[k].copy()
            while len(self._recent) > _RECENT_PIECES:
                self._recent.popitem(last=False)
        return result

    def _run(self, batch: list[list[int]]) -> Any:
        """One checked forward pass; normalised when the embedder normalises."""
        import numpy as np

        try:
            vectors = np.asarray(self._embed_ids(batch), dtype=np.float32)
        except EmbeddingError as exc:
            raise EmbeddingError(f"{exc} ({self._describe(batch)})") from None
        except Exception as exc:  # the runtime boundary: whatever it raises becomes typed
            raise EmbeddingError(
                f"{self.name}: embedding {self._describe(batch)} failed: {type(exc).__name__}: "
                f"{exc}"
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(batch):
            raise EmbeddingError(
                f"{self.name}: the model returned shape {vectors.shape} for {len(batch)} inputs"
            )
        if vectors.shape[1] != self.dimension:
            raise EmbeddingError(
                f"{self.name}: vectors have {vectors.shape[1]} dimensions, "
                f"expected {self.dimension}"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingError(f"{self.name}: the model returned non-finite values")
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return vectors

    def _describe(self, batch: list[list[int]]) -> str:
        longest = max((len(ids) for ids in batch), default=0)
        return f"a batch of {len(batch)} pieces of up to {longest} tokens"
