"""The one decoder of inline data: ``data:`` URLs and bare base64 (``file_data``,
``input_audio.data``), for documents, images and audio alike.

Liberal in what it accepts, strict about size:

* ``data:`` is matched case-insensitively, and so is ``;base64`` (``;BASE64``); whitespace
  around the header's parts is ignored; the media type is lowercased (``text/plain`` when the
  URL names none).
* base64 follows the WHATWG "forgiving-base64 decode": ASCII whitespace anywhere is ignored
  (base64 wrapped at 76 columns, MIME style), the ``=`` padding may be missing, and the URL-safe
  alphabet (``-``, ``_``) is accepted too; a percent-encoded payload (``%2B`` for ``+``, as
  RFC 2397 allows) is unquoted first.
* a ``data:`` URL without ``;base64`` holds percent-encoded bytes (``data:,a%20b``).
* the byte limit is checked twice: before decoding, from the encoded length (the fewest bytes
  that many characters can decode to), so a huge payload is refused without decoding it; and on
  the decoded bytes.

Errors are :class:`~memreader.errors.DocumentError`\\ s naming what was decoded (``file_data``,
``inline image data``), the limit and where it was (the ``where`` keywords).
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from memreader.errors import DocumentError

__all__ = ["InlineData", "decode_inline", "is_data_url"]

_WHITESPACE = " \t\n\r\f\v"
_URLSAFE = str.maketrans("-_", "+/", _WHITESPACE)


@dataclass(frozen=True)
class InlineData:
    """Decoded inline data.

    Attributes:
        data: the bytes.
        media_type: the ``data:`` URL's media type (``text/plain`` when it names none), or
            ``None`` for bare base64.
    """

    data: bytes
    media_type: str | None


def is_data_url(text: str) -> bool:
    """Whether ``text`` is a ``data:`` URL (the scheme in any case)."""
    return text[:5].lower() == "data:"


def decode_inline(
    text: str,
    max_bytes: int | None,
    *,
    what: str = "file_data",
    limit_name: str = "max_file_bytes",
    where: Mapping[str, int | None] | None = None,
) -> InlineData:
    """The bytes of a ``data:`` URL or of bare base64 (see the module for what is accepted).

    Args:
        max_bytes: the most decoded bytes (``None``: no limit).
        what: what the data is, for messages (``file_data``, ``inline image data``).
        limit_name: the setting ``max_bytes`` comes from, for messages.
        where: ``scene_index``/``message_index``/``part_index`` for the error.

    Raises:
        DocumentError: a ``data:`` URL without a comma, data that is not valid base64, or more
            than ``max_bytes`` bytes (checked from the encoded length before decoding).
    """
    located = dict(where or {})
    if not is_data_url(text):
        return InlineData(_base64(text, max_bytes, what, limit_name, located), None)
    header, comma, payload = text[5:].partition(",")
    if not comma:
        raise DocumentError(f"{what} is not a valid data: URL (no ',' before the data)", **located)
    params = [param.strip() for param in header.split(";")]
    media_type = params[0].lower() or "text/plain"
    if any(param.lower() == "base64" for param in params[1:]):
        return InlineData(_base64(payload, max_bytes, what, limit_name, located), media_type)
    # Percent-encoding turns one byte into at most three characters.
    _check_encoded(len(payload), len(payload) // 3, max_bytes, what, limit_name, located)
    raw = urllib.parse.unquote_to_bytes(payload)
    return InlineData(_check_decoded(raw, max_bytes, what, limit_name, located), media_type)


def _base64(
    payload: str, max_bytes: int | None, what: str, limit_name: str, where: dict[str, int | None]
) -> bytes:
    # Count before copying: whitespace is not data, and a huge payload is refused unread.
    chars = len(payload) - sum(payload.count(space) for space in _WHITESPACE)
    if "%" in payload:  # percent-encoded base64: three characters may stand for one
        _check_encoded(chars, chars // 3 * 3 // 4 - 2, max_bytes, what, limit_name, where)
        payload = urllib.parse.unquote(payload)
        chars = len(payload) - sum(payload.count(space) for space in _WHITESPACE)
    _check_encoded(chars, chars * 3 // 4 - 2, max_bytes, what, limit_name, where)
    compact = payload.translate(_URLSAFE).rstrip("=")
    if len(compact) % 4 == 1:
        raise DocumentError(
            f"{what} is not valid base64: {len(compact)} characters cannot be base64", **where
        )
    try:
        raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DocumentError(f"{what} is not valid base64: {exc}", **where) from None
    return _check_decoded(raw, max_bytes, what, limit_name, where)


def _check_encoded(
    chars: int,
    smallest: int,
    max_bytes: int | None,
    what: str,
    limit_name: str,
    where: dict[str, int | None],
) -> None:
    """Refuse before decoding: ``chars`` characters decode to at least ``smallest`` bytes."""
    if max_bytes is not None and smallest > max_bytes:
        raise DocumentError(
            f"{what} is over the {limit_name} limit ({max_bytes}): {chars} encoded characters",
            **where,
        )


def _check_decoded(
    raw: bytes, max_bytes: int | None, what: str, limit_name: str, where: dict[str, int | None]
) -> bytes:
    if max_bytes is not None and len(raw) > max_bytes:
        raise DocumentError(
            f"{what} is {len(raw)} bytes, over the {limit_name} limit ({max_bytes})", **where
        )
    return raw
