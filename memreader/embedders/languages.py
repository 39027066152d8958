"""How much of a text an embedder cannot read, and the note that says so.

The bundled all-MiniLM-L6-v2 was trained on English: most Chinese characters become its
``[UNK]`` token, and the ones it knows carry no Chinese meaning (an unrelated Chinese sentence
scores closer to a Chinese query than its paraphrase does). Its vector of such a window is
noise, and nothing fails: so memreader measures, per window, the share of the text's *letters*
the embedder cannot read, and says so when it is :data:`UNREADABLE_THRESHOLD` or more (a note
in the window's :class:`~memreader.steps.report.WindowReport`, one warning per call).

What "cannot read" means (:func:`unreadable_share`)
---------------------------------------------------
Letters are the characters for which ``str.isalpha()`` holds (digits, punctuation, spaces,
emoji do not count either way). A letter cannot be read when

* its script is not one of the scripts the model was trained on (``scripts``; an English model
  reads :data:`LATIN` only: Greek, Cyrillic, Han, kana, Hangul, Arabic... are unreadable), or
* it lies inside a span that the model's tokenizer mapped to its unknown token
  (``unknown_spans``; :func:`unknown_spans` reads them off a ``tokenizers`` ``Encoding``).

Scripts are told apart by code point blocks (:data:`SCRIPT_RANGES`: Latin, Greek, Cyrillic),
not by the full Unicode Script property: simple, fast (two regular-expression scans of the
text), and right for every letter of those blocks; the few Latin-looking letters outside them
(``ℓ``, letterlike symbols) count as unreadable. ``scripts=None`` reads every script, so only
the unknown spans count (a multilingual tokenizer-based model).

The embedder ability
--------------------
``unreadable_share(text: str) -> float | None`` is one of an embedder's optional abilities
(:class:`~memreader.embedders.base.EmbedderDefaults`): the share (0..1) of ``text``'s letters
it cannot read, or ``None`` when it does not know (the default: the remote ``openai`` and
``ollama`` backends, which are assumed multilingual, and most plugins). The embed step calls it
once per window, on the text it embeds for that window. A local embedder implements it as::

    def unreadable_share(self, text: str) -> float | None:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        spans = unknown_spans(encoding, unk_token_id(self.tokenizer))
        return unreadable_share(text, unknown_spans=spans, scripts=LATIN)

>>> unreadable_share("I like green tea.")
0.0
>>> round(unreadable_share("我喜欢喝绿茶 (green tea)"), 2)
0.43
>>> unreadable_share("tea ☕ 42!", unknown_spans=[(0, 3)])
1.0
>>> unreadable_share("12:30 ☕")
0.0
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

__all__ = [
    "LATIN",
    "README_SECTION",
    "SCRIPT_RANGES",
    "UNREADABLE_THRESHOLD",
    "Encoding",
    "unk_token_id",
    "unknown_spans",
    "unreadable_note",
    "unreadable_share",
]

#: The share of a window's letters at which memreader says its vector says little about it
#: ("mostly" unreadable).
UNREADABLE_THRESHOLD = 0.5

#: The section of the docs the note points to (on the page ``docs/guides/fast-mode.md``).
README_SECTION = "Choosing an embedding model for other languages"

#: Code point blocks of the scripts an embedder may declare it reads (inclusive ranges; only
#: the letters among them count).
SCRIPT_RANGES: Mapping[str, tuple[tuple[int, int], ...]] = {
    "Latin": (
        (0x0041, 0x005A),  # A-Z
        (0x0061, 0x007A),  # a-z
        (0x00AA, 0x00AA),  # ª
        (0x00BA, 0x00BA),  # º
        (0x00C0, 0x024F),  # Latin-1 letters, Latin Extended-A and -B
        (0x0250, 0x02FF),  # IPA extensions, spacing modifier letters
        (0x1D00, 0x1DBF),  # phonetic extensions
        (0x1E00, 0x1EFF),  # Latin Extended Additional (Vietnamese)
        (0x2071, 0x2071),  # superscript i
        (0x207F, 0x207F),  # superscript n
        (0x2090, 0x209C),  # subscript letters
        (0x2C60, 0x2C7F),  # Latin Extended-C
        (0xA720, 0xA7FF),  # Latin Extended-D
        (0xAB30, 0xAB6F),  # Latin Extended-E
        (0xFB00, 0xFB06),  # ligatures (ﬁ, ﬂ)
        (0xFF21, 0xFF3A),  # fullwidth A-Z
        (0xFF41, 0xFF5A),  # fullwidth a-z
    ),
    "Greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "Cyrillic": ((0x0400, 0x052F), (0x1C80, 0x1C8F), (0x2DE0, 0x2DFF), (0xA640, 0xA69F)),
}

#: The scripts of an English-only model.
LATIN: frozenset[str] = frozenset({"Latin"})

# Letters, as runs: word characters that are neither digits nor "_" (``re`` has no \p{L}). This
# also takes in numeric signs such as "²" or "½"; :func:`_count` drops them again.
_LETTERS = re.compile(r"[^\W\d_]+")


class Encoding(Protocol):
    """What :func:`unknown_spans` reads of a ``tokenizers.Encoding``."""

    @property
    def ids(self) -> Sequence[int]:
        """Token ids."""
        ...

    @property
    def offsets(self) -> Sequence[tuple[int, int]]:
        """Each token's ``(start, end)`` character span in the encoded text."""
        ...


def unreadable_share(
    text: str,
    *,
    unknown_spans: Sequence[tuple[int, int]] = (),
    scripts: frozenset[str] | None = LATIN,
) -> float:
    """The share (0..1) of ``text``'s letters an embedder cannot read (see the module
    docstring): letters of scripts not in ``scripts`` (``None``: every script is read) plus
    letters inside ``unknown_spans`` (character ``(start, end)`` spans of ``text`` that the
    tokenizer mapped to its unknown token; they may overlap, come in any order or reach past
    the text). Text without letters gives ``0.0``.

    Raises:
        ValueError: ``scripts`` names a script not in :data:`SCRIPT_RANGES`.
    """
    letters = _count(_LETTERS, text)
    if not letters:
        return 0.0
    foreign = _foreign_letters(scripts)
    unreadable = _count(foreign, text) if foreign is not None else 0
    if unknown_spans:
        inside = "\0".join(text[start:end] for start, end in _merged(unknown_spans, len(text)))
        # Letters of readable scripts inside unknown spans (foreign ones are counted already).
        unreadable += _count(_LETTERS, inside)
        if foreign is not None:
            unreadable -= _count(foreign, inside)
    return min(1.0, unreadable / letters)


def unknown_spans(encoding: Encoding, unk_id: int | None) -> list[tuple[int, int]]:
    """The character spans of ``encoding``'s tokens whose id is ``unk_id`` (none when the
    tokenizer has no unknown token: ``unk_id`` is ``None``)."""
    if unk_id is None:
        return []
    return [
        (start, end)
        for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True)
        if token == unk_id and end > start
    ]


def unk_token_id(tokenizer: Any) -> int | None:
    """The id of a ``tokenizers.Tokenizer``'s unknown token (``[UNK]`` for WordPiece, ``<unk>``
    for most others), or ``None`` when its model has none."""
    token = getattr(getattr(tokenizer, "model", None), "unk_token", None)
    if not isinstance(token, str) or not token:
        return None
    found = tokenizer.token_to_id(token)
    return found if isinstance(found, int) else None


def unreadable_note(share: float, embedder: str) -> str:
    """The report note for a window of which ``share`` of the letters the embedder called
    ``embedder`` cannot read.

    >>> note = unreadable_note(0.625, "local:all-MiniLM-L6-v2")
    >>> print(note[:73])
    62% of this window's letters are text the embedder local:all-MiniLM-L6-v2
    """
    return (
        f"{int(share * 100)}% of this window's letters are text the embedder {embedder} cannot "
        "read (a script it was not trained on, or characters it has no token for); its vector "
        f"says little about this window: see '{README_SECTION}' in the docs (Fast mode)"
    )


def _count(pattern: re.Pattern[str], text: str) -> int:
    """How many letters (``str.isalpha``) ``pattern``'s matches in ``text`` hold."""
    matched = "".join(pattern.findall(text))
    return len(matched) if matched.isalpha() else sum(map(str.isalpha, matched))


@lru_cache(maxsize=16)
def _foreign_letters(scripts: frozenset[str] | None) -> re.Pattern[str] | None:
    """Runs of letters outside ``scripts`` (``None`` when every script is read)."""
    if scripts is None:
        return None
    unknown = sorted(set(scripts) - set(SCRIPT_RANGES))
    if unknown:
        raise ValueError(
            f"unknown script(s) {unknown}; expected some of {sorted(SCRIPT_RANGES)} "
            "(or None for every script)"
        )
    ranges = "".join(
        f"\\u{start:04x}-\\u{end:04x}"
        for name in sorted(scripts)
        for start, end in SCRIPT_RANGES[name]
    )
    return re.compile(f"[^\\W\\d_{ranges}]+")


def _merged(spans: Sequence[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """``spans`` clipped to ``[0, length]``, sorted, with overlapping or touching ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted((max(0, s), min(length, e)) for s, e in spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
