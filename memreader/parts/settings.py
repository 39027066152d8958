"""Settings of message parts: how images are checked and prepared (:class:`ImageConfig`) and
the endpoint audio is transcribed by (:class:`TranscriptionConfig`). Leaf config models (no
I/O, no heavy imports), used by :class:`~memreader.steps.parts.PartsSettings` (the multimodal
reader's), :mod:`memreader.parts.images`, :mod:`memreader.parts.audio` and
:mod:`memreader.parts.resources`. How the bytes of a part are downloaded is
:class:`~memreader.fetch.settings.FetchConfig`'s.

>>> ImageConfig().max_side
1568
"""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from memreader.config_model import ConfigModel
from memreader.secret_masking import HidesSecrets

__all__ = ["DEFAULT_IMAGE_FORMATS", "ImageConfig", "TranscriptionConfig"]

#: Pillow format names accepted by default: what vision APIs take, plus BMP and TIFF which are
#: re-encoded before sending.
DEFAULT_IMAGE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF")


class ImageConfig(ConfigModel):
    """How images are checked and prepared (see :mod:`memreader.parts.images`).

    - ``formats``: Pillow format names accepted (others are an ``ImageError``).
    - ``max_bytes`` (20 MiB): the most bytes of one encoded image.
    - ``max_pixels`` (50 million): the most pixels (width x height) of one image, checked from
      its header before decoding, against decompression bombs.
    - ``max_side`` (1568): images are downsized so their longest side is at most this many
      pixels before they are sent to a vision model.
    - ``jpeg_quality`` (85): quality of re-encoded JPEG images.
    - ``describe`` (``True``): in fine mode, ask ``image_parser_llm`` to describe each image
      (once per distinct image) and extract memories from it.
    - ``keep_inline_bytes`` (1 MiB): an image given inline (a ``data:`` URL) has no reference
      to read it again, so its items' sources keep it as prepared (``image_data_url``), for
      refinement to send to the vision model again, when the prepared image is at most this
      many bytes; ``0`` keeps none (refinement then reports such images as not kept).
    """

    formats: list[str] = Field(default_factory=lambda: list(DEFAULT_IMAGE_FORMATS))
    max_bytes: int = Field(default=20 * 1024 * 1024, gt=0)
    max_pixels: int = Field(default=50_000_000, gt=0)
    max_side: int = Field(default=1568, ge=16, le=16384)
    jpeg_quality: int = Field(default=85, ge=1, le=95)
    describe: bool = True
    keep_inline_bytes: int = Field(default=1024 * 1024, ge=0)

    @field_validator("formats")
    @classmethod
    def _upper(cls, formats: list[str]) -> list[str]:
        if not formats:
            raise ValueError("formats must name at least one image format")
        return [f.strip().upper() for f in formats]


class TranscriptionConfig(ConfigModel, HidesSecrets):
    """An OpenAI-compatible ``/audio/transcriptions`` endpoint (see
    :mod:`memreader.parts.audio`). Without one, audio parts are kept as placeholder items
    and reported as unsupported.

    ``api_key`` and a password in ``base_url`` are never shown; ``None`` reads
    ``$OPENAI_API_KEY`` when ``base_url`` is OpenAI's, and sends none otherwise.
    """

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: SecretStr | None = None
    language: str | None = None
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    max_retries: int = Field(default=2, ge=0, le=10)
    max_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    max_response_bytes: int = Field(default=4 * 1024 * 1024, gt=0)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        return value
