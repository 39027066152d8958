"""Images checked and re-encoded before they reach a vision model, with bounded decoding.

Why this module exists
----------------------
An image part is untrusted bytes: it may be a format the model cannot take, a truncated
download, or a decompression bomb (a few kilobytes of PNG that claim 100000 x 100000 pixels and
would take 40 GB to decode). So every image goes through one gate, in this order, each step
cheap before the next costly one:

1. the byte limit (``ImageConfig.max_bytes``), before Pillow sees anything;
2. ``Image.open``, which reads the header only, inside :func:`_pillow_errors` (Pillow's own
   ``DecompressionBombError``, and its warning where warnings are errors, become
   :class:`~memreader.errors.ImageError`);
3. the format against ``ImageConfig.formats``;
4. ``width * height`` against ``ImageConfig.max_pixels``, ourselves, from the header. Pillow's
   process-wide ``Image.MAX_IMAGE_PIXELS`` is neither relied on nor changed (changing it is not
   thread-safe, and it belongs to the application);
5. only then the decode (``load()``), of the first frame; a truncated or corrupt file is an
   ``ImageError``: ``ImageFile.LOAD_TRUNCATED_IMAGES`` is never set (it is process-wide, and
   half-grey images would be described as if they were real);
6. EXIF orientation applied, the mode made safe for an encoder, the image downsized to
   ``max_side`` and re-encoded: PNG when it has alpha or a palette (a GIF frame), JPEG
   otherwise. Re-encoding also drops metadata (EXIF, GPS position, comments) the model does not
   need.

:func:`image_info` stops after step 4 (format and size without decoding); :func:`prepare_image`
does all of it. Pillow is imported on first use, so ``import memreader`` does not load it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memreader.errors import ImageError
from memreader.parts.settings import ImageConfig

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = ["PreparedImage", "image_info", "location_kwargs", "prepare_image"]

logger = logging.getLogger(__name__)

#: Modes whose pixels carry an alpha channel.
_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})
#: Modes a JPEG or PNG encoder takes as they are (after the alpha/palette cases).
_PLAIN_MODES = frozenset({"RGB", "L"})
#: Modes of more than 8 bits per sample (scaled to 8 bits, not clipped).
_WIDE_MODES = frozenset({"I", "F", "I;16", "I;16B", "I;16L", "I;16N"})
#: EXIF orientations that swap width and height (rotated by 90 or 270 degrees).
_SWAPPING_ORIENTATIONS = frozenset({5, 6, 7, 8})
_EXIF_ORIENTATION = 0x0112
#: Formats Pillow names apart that are another format to everyone else: MPO is a JPEG with
#: more pictures appended (what many phones and cameras write), and is read as that JPEG.
_FORMAT_ALIASES = {"MPO": "JPEG"}


def location_kwargs(where: Mapping[str, int | None] | None) -> dict[str, int | None]:
    """The ``scene_index``/``message_index``/``part_index`` keywords of an
    :class:`~memreader.errors.InputError` from ``where``, whose keys may be those names or
    ``scene``/``message``/``part``; other keys are ignored.

    >>> location_kwargs({"scene": 0, "part_index": 2})
    {'scene_index': 0, 'part_index': 2}
    """
    if not where:
        return {}
    out: dict[str, int | None] = {}
    for short in ("scene", "message", "part"):
        value = where.get(f"{short}_index", where.get(short))
        if value is not None:
            out[f"{short}_index"] = value
    return out


@dataclass(frozen=True)
class PreparedImage:
    """An image ready to send to a vision model.

    Attributes:
        data: the re-encoded bytes to send.
        media_type: ``"image/png"`` or ``"image/jpeg"`` (the type of ``data``).
        format: the original Pillow format name (``"PNG"``, ``"JPEG"``, ``"WEBP"``, ...;
            a multi-picture JPEG, Pillow's ``"MPO"``, is ``"JPEG"``).
        width: the original width, as displayed (after EXIF orientation).
        height: the original height, as displayed.
        sent_width: the width of ``data`` (at most ``max_side``).
        sent_height: the height of ``data``.
        original_bytes: the size of the original encoded image.
        digest: the sha256 (hex) of the original bytes: the same picture sent twice is
            described once.
    """

    data: bytes
    media_type: str
    format: str
    width: int
    height: int
    sent_width: int
    sent_height: int
    original_bytes: int
    digest: str

    def base64(self) -> str:
        """``data`` in base64 (what Ollama's ``images`` take)."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data`` as a ``data:`` URL (what OpenAI's ``image_url`` parts take)."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self, source: str) -> str:
        """One line that stands for the image where no model looks at it (fast mode).

        ``source`` is a safe label of where the image came from (a URL without credentials, a
        file name); its last path segment names the image.

        >>> image = PreparedImage(b"", "image/png", "PNG", 800, 600, 800, 600, 120_832, "0")
        >>> image.describe("https://host/photo.png")
        '[image: photo.png (PNG, 800x600, 118 KB) from https://host/photo.png]'
        >>> image.describe("photo.png")
        '[image: photo.png (PNG, 800x600, 118 KB)]'
        """
        path = urlsplit(source).path if "://" in source else source
        name = path.rstrip("/").rsplit("/", 1)[-1] or source
        size = f"{self.format}, {self.width}x{self.height}, {_human_bytes(self.original_bytes)}"
        origin = f" from {source}" if source != name else ""
        return f"[image: {name} ({size}){origin}]"


def _human_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{round(count / 1024)} KB"
    return f"{count / (1024 * 1024):.1f} MB"


class _Context:
    """How errors name the image and where it was (the same for every step)."""

    def __init__(self, label: str, where: Mapping[str, int | None] | None) -> None:
        self.label = label
        self.where = location_kwargs(where)

    def error(self, reason: str) -> ImageError:
        return ImageError(f"{self.label}: {reason}", **self.where)


@contextlib.contextmanager
def _pillow_errors(ctx: _Context, what: str) -> Iterator[None]:
    """Pillow's failures in ``what`` (a step) as :class:`ImageError`.

    Pillow raises many types for bad input (``OSError`` for truncated data, ``SyntaxError``,
    ``ValueError``, ``struct.error``, ``zlib.error``, ``EOFError``, ``IndexError``...), so any
    ``Exception`` from it is a bad image; its own bomb check, from ``Image.open``, names the
    pixel limit (``DecompressionBombWarning`` reaches here only where warnings are errors).
    """
    from PIL import Image, UnidentifiedImageError

    try:
        yield
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ctx.error(f"the image has too many pixels to decode safely ({exc})") from None
    except UnidentifiedImageError:
        raise ctx.error("not an image in a format that can be read") from None
    except MemoryError:
        raise ctx.error("the image needs more memory to decode than is available") from None
    except Exception as exc:  # see the docstring: every Pillow failure is a bad image
        logger.debug("%s: Pillow failed while %s", ctx.label, what, exc_info=True)
        raise ctx.error(f"truncated or corrupt image ({what}: {type(exc).__name__})") from None


def _open_checked(data: bytes, config: ImageConfig, ctx: _Context) -> tuple[PILImage, int, int]:
    """The image opened from its header, checked against the byte, format and pixel limits,
    not decoded; and its displayed width and height (after EXIF orientation)."""
    from PIL import Image

    if not data:
        raise ctx.error("the image is empty (0 bytes)")
    if len(data) > config.max_bytes:
        raise ctx.error(
            f"the image is {len(data)} bytes, over the limit of {config.max_bytes} "
            "bytes (images.max_bytes)"
        )
    with _pillow_errors(ctx, "reading the header"):
        image = Image.open(io.BytesIO(data))
    try:
        fmt = _format_of(image)
        if fmt not in config.formats:
            raise ctx.error(
                f"the image format {fmt or 'unknown'} is not allowed (images.formats: "
                f"{', '.join(config.formats)})"
            )
        width, height = image.size
        if width <= 0 or height <= 0:
            raise ctx.error(f"the image claims an empty size ({width}x{height})")
        if width * height > config.max_pixels:
            raise ctx.error(
                f"the image is {width}x{height} = {width * height} pixels, over the limit of "
                f"{config.max_pixels} (images.max_pixels): refused before decoding"
            )
        if _orientation(image) in _SWAPPING_ORIENTATIONS:
            width, height = height, width
    except BaseException:
        image.close()
        raise
    return image, width, height


def _format_of(image: PILImage) -> str:
    fmt = (image.format or "").upper()
    return _FORMAT_ALIASES.get(fmt, fmt)


def _orientation(image: PILImage) -> int | None:
    """The EXIF orientation tag from the header (no decoding); ``None`` if absent or broken."""
    try:
        value = image.getexif().get(_EXIF_ORIENTATION)
    except Exception:  # broken EXIF is ignored, not fatal: the pixels may be fine
        logger.debug("unreadable EXIF data ignored", exc_info=True)
        return None
    return value if isinstance(value, int) else None


def image_info(
    data: bytes,
    config: ImageConfig,
    *,
    label: str = "image",
    where: Mapping[str, int | None] | None = None,
) -> tuple[str, int, int]:
    """The format, width and height (as displayed) of an image, read from its header only.

    Checks the byte limit, the allowed formats and the pixel limit without decoding (cheap
    even for a decompression bomb). Raises :class:`~memreader.errors.ImageError`, naming
    ``label`` and the location in ``where`` (``scene``/``message``/``part``).
    """
    ctx = _Context(label, where)
    image, width, height = _open_checked(data, config, ctx)
    with image:
        return _format_of(image), width, height


def prepare_image(
    data: bytes,
    config: ImageConfig,
    *,
    label: str = "image",
    where: Mapping[str, int | None] | None = None,
) -> PreparedImage:
    """Check, decode (first frame only), orient, downsize and re-encode an image.

    See the module docstring for the order of the checks. Raises
    :class:`~memreader.errors.ImageError` (naming ``label`` and the location in ``where``) for
    an image over ``max_bytes`` or ``max_pixels``, in a format not in ``formats``, or that is
    truncated or corrupt.
    """
    from PIL import Image, ImageFile

    ctx = _Context(label, where)
    image, width, height = _open_checked(data, config, ctx)
    fmt = _format_of(image)
    side = config.max_side
    with image:
        with _pillow_errors(ctx, "decoding"):
            if isinstance(image, ImageFile.ImageFile) and fmt == "JPEG":
                # JPEG can decode at 1/2, 1/4 or 1/8 scale: far less work for a big photo,
                # kept at least twice the target size so the final resize stays sharp.
                image.draft(None, (2 * side, 2 * side))
            image.load()  # the first frame (animated images start there)
        with _pillow_errors(ctx, "converting"):
            oriented = _oriented(image)
            keep_png = fmt == "GIF" or _has_alpha(oriented) or oriented.mode in ("P", "PA", "1")
            converted = _safe_mode(oriented, keep_png)
            converted.thumbnail((side, side), Image.Resampling.LANCZOS)
            buffer = io.BytesIO()
            if keep_png:
                converted.save(buffer, "PNG", compress_level=6)
            else:
                converted.save(buffer, "JPEG", quality=config.jpeg_quality)
            sent_width, sent_height = converted.size
    logger.debug(
        "%s: %s %dx%d (%d bytes) sent as %s %dx%d (%d bytes)",
        label,
        fmt,
        width,
        height,
        len(data),
        "PNG" if keep_png else "JPEG",
        sent_width,
        sent_height,
        buffer.tell(),
    )
    return PreparedImage(
        data=buffer.getvalue(),
        media_type="image/png" if keep_png else "image/jpeg",
        format=fmt,
        width=width,
        height=height,
        sent_width=sent_width,
        sent_height=sent_height,
        original_bytes=len(data),
        digest=hashlib.sha256(data).hexdigest(),
    )


def _oriented(image: PILImage) -> PILImage:
    """``image`` turned as its EXIF orientation says (itself when there is none, or when the
    EXIF data cannot be read: a bad tag must not lose a good picture)."""
    from PIL import ImageOps

    if _orientation(image) in (None, 1):
        return image
    try:
        return ImageOps.exif_transpose(image)
    except Exception:  # see above: keep the pixels as they are
        logger.debug("EXIF orientation could not be applied", exc_info=True)
        return image


def _has_alpha(image: PILImage) -> bool:
    return image.mode in _ALPHA_MODES or "transparency" in image.info


def _safe_mode(image: PILImage, keep_png: bool) -> PILImage:
    """``image`` in a mode that resizes well (LANCZOS, not the nearest-neighbour Pillow falls
    back to for palettes and 1-bit images) and that the chosen encoder takes: RGBA or RGB for
    PNG, RGB or L for JPEG; more-than-8-bit samples are scaled to 8 bits, not clipped."""
    mode = image.mode
    if keep_png:
        if _has_alpha(image):
            return image if mode == "RGBA" else image.convert("RGBA")
        return image if mode in _PLAIN_MODES else image.convert("RGB")
    if mode in _PLAIN_MODES:
        return image
    if mode in _WIDE_MODES:
        return _to_8bit(image).convert("RGB")
    return image.convert("RGB")  # CMYK, YCbCr, LAB, HSV, RGBX, 1, ...


def _to_8bit(image: PILImage) -> PILImage:
    """A 16-bit or float image as 8-bit grey, its range stretched to 0..255."""
    wide = image.convert("F")
    low, high = wide.getextrema()
    low_f, high_f = float(low), float(high)  # type: ignore[arg-type]
    scale = 255.0 / (high_f - low_f) if high_f > low_f else 0.0
    return wide.point(lambda v: (v - low_f) * scale).convert("L")
