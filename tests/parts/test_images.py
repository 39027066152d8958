"""Images: checks before decoding (bytes, format, pixels), bounded decoding, orientation, modes,
downsizing and re-encoding (memreader.parts.images). Every image is made here with Pillow,
or by hand where Pillow would refuse to write it (decompression bombs)."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import random
import struct
import subprocess
import sys
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from PIL import Image, ImageFile

from memreader.errors import DocumentError, ImageError
from memreader.parts.images import PreparedImage, image_info, prepare_image
from memreader.parts.settings import ImageConfig

CONFIG = ImageConfig()


def encode(image: Image.Image, fmt: str, **params: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def noise(size: tuple[int, int], mode: str = "RGB") -> Image.Image:
    """Random pixels: nothing compresses them, so a cut file is cut in its pixel data."""
    bands = len(mode)
    return Image.frombytes(mode, size, os.urandom(size[0] * size[1] * bands))


def _chunk(tag: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(tag + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + tag + payload + struct.pack(">I", crc)


def png_bomb(width: int, height: int, *, rows: int | None = None) -> bytes:
    """A 1-bit grey PNG of ``width`` x ``height`` black pixels, compressed (a real
    decompression bomb: kilobytes that decode to ``width * height`` pixels). ``rows`` writes
    only that many rows of data (a header that claims more than the file holds)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    row = b"\x00" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    count = height if rows is None else rows
    idat = b"".join(packer.compress(row) for _ in range(count)) + packer.flush()
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


def from_data_url(url: str) -> Image.Image:
    header, _, payload = url.partition(",")
    assert header.startswith("data:image/") and header.endswith(";base64")
    image = Image.open(io.BytesIO(base64.b64decode(payload, validate=True)))
    image.load()
    return image


# -- formats and re-encoding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "mode", "media_type"),
    [
        ("PNG", "RGB", "image/jpeg"),
        ("PNG", "RGBA", "image/png"),
        ("JPEG", "RGB", "image/jpeg"),
        ("GIF", "P", "image/png"),
        ("WEBP", "RGB", "image/jpeg"),
        ("WEBP", "RGBA", "image/png"),
        ("BMP", "RGB", "image/jpeg"),
        ("TIFF", "CMYK", "image/jpeg"),
    ],
)
def test_formats_are_read_and_reencoded(fmt: str, mode: str, media_type: str) -> None:
    data = encode(Image.new(mode, (120, 80)), fmt)
    prepared = prepare_image(data, CONFIG, label="photo")
    assert prepared.format == fmt
    assert prepared.media_type == media_type
    assert (prepared.width, prepared.height) == (120, 80)
    assert (prepared.sent_width, prepared.sent_height) == (120, 80)  # never upscaled
    assert prepared.original_bytes == len(data)
    assert prepared.digest == hashlib.sha256(data).hexdigest()
    sent = from_data_url(prepared.data_url())
    assert sent.format == media_type.split("/")[1].upper()
    assert sent.size == (120, 80)
    assert image_info(data, CONFIG) == (fmt, 120, 80)


def test_data_url_and_base64_round_trip() -> None:
    original = Image.new("RGB", (64, 48), (200, 30, 30))
    prepared = prepare_image(encode(original, "PNG"), CONFIG)
    assert prepared.data_url() == f"data:image/jpeg;base64,{prepared.base64()}"
    assert base64.b64decode(prepared.base64()) == prepared.data
    red, green, blue = from_data_url(prepared.data_url()).convert("RGB").getpixel((10, 10))
    assert red > 180 and green < 60 and blue < 60


def test_alpha_is_kept_as_png() -> None:
    image = Image.new("RGBA", (40, 40), (0, 0, 255, 0))
    image.putpixel((5, 5), (255, 0, 0, 255))
    prepared = prepare_image(encode(image, "PNG"), CONFIG)
    assert prepared.media_type == "image/png"
    sent = from_data_url(prepared.data_url())
    assert sent.mode == "RGBA"
    assert sent.getpixel((0, 0))[3] == 0
    assert sent.getpixel((5, 5)) == (255, 0, 0, 255)


def test_palette_with_transparency_keeps_it() -> None:
    image = Image.new("P", (30, 30), 1)
    image.putpalette([0, 0, 0, 255, 0, 0] + [0] * (254 * 3))
    data = encode(image, "PNG", transparency=0)
    sent = from_data_url(prepare_image(data, CONFIG).data_url())
    assert sent.mode == "RGBA"


def test_sixteen_bit_grey_is_scaled_not_clipped() -> None:
    image = Image.new("I;16", (256, 4))
    for x in range(256):
        for y in range(4):
            image.putpixel((x, y), x * 256)  # 0 .. 65280: all "white" if clipped to 255
    prepared = prepare_image(encode(image, "PNG"), CONFIG)
    assert prepared.media_type == "image/jpeg"
    low, high = from_data_url(prepared.data_url()).convert("L").getextrema()
    assert low < 20 and high > 235


def test_animated_gif_uses_the_first_frame() -> None:
    frames = [Image.new("RGB", (32, 32), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    prepared = prepare_image(buffer.getvalue(), CONFIG)
    assert prepared.format == "GIF" and prepared.media_type == "image/png"
    red, _, blue, *_ = from_data_url(prepared.data_url()).convert("RGB").getpixel((16, 16))
    assert red > 200 and blue < 50


# -- downsizing and orientation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "max_side", "expected"),
    [((4000, 1000), 400, (400, 100)), ((900, 3000), 300, (90, 300)), ((50, 30), 400, (50, 30))],
)
def test_downsizing_keeps_the_aspect_ratio(
    size: tuple[int, int], max_side: int, expected: tuple[int, int]
) -> None:
    config = ImageConfig(max_side=max_side)
    prepared = prepare_image(encode(Image.new("RGB", size), "JPEG"), config)
    assert (prepared.width, prepared.height) == size
    assert (prepared.sent_width, prepared.sent_height) == expected
    assert from_data_url(prepared.data_url()).size == expected


def decoded_sizes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The size of every image Pillow decodes from now on (work counted, not timed: a bomb
    refused from its header decodes nothing, a big JPEG read by ``draft`` decodes less)."""
    sizes: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load

    def counted(image: Any) -> Any:
        sizes.append(image.size)
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", counted)
    return sizes


def test_big_jpeg_is_decoded_reduced_and_sharp_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    # draft() decodes at a reduced scale, never below twice the target.
    data = encode(noise((4000, 3000)), "JPEG", quality=70)
    decoded = decoded_sizes(monkeypatch)
    prepared = prepare_image(data, ImageConfig(max_side=500))
    assert decoded and max(w * h for w, h in decoded) <= 2000 * 1500, decoded
    assert (prepared.sent_width, prepared.sent_height) == (500, 375)
    assert (prepared.width, prepared.height) == (4000, 3000)


def test_exif_orientation_is_applied() -> None:
    # Stored 200x100, left half red, right half blue; orientation 6: shown turned 90 degrees
    # clockwise, so the stored left half is shown on top.
    image = Image.new("RGB", (200, 100), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 100, 100))
    exif = Image.Exif()
    exif[0x0112] = 6
    data = encode(image, "JPEG", exif=exif, quality=95)
    assert image_info(data, CONFIG) == ("JPEG", 100, 200)
    prepared = prepare_image(data, CONFIG)
    assert (prepared.width, prepared.height) == (100, 200)
    assert (prepared.sent_width, prepared.sent_height) == (100, 200)
    sent = from_data_url(prepared.data_url()).convert("RGB")
    top = sent.getpixel((50, 25))
    bottom = sent.getpixel((50, 175))
    assert top[0] > 200 and top[2] < 60
    assert bottom[2] > 200 and bottom[0] < 60
    assert "exif" not in sent.info  # metadata is not sent on


def test_broken_exif_does_not_lose_the_picture() -> None:
    data = encode(Image.new("RGB", (20, 10)), "JPEG", exif=b"Exif\x00\x00garbage-not-tiff")
    assert prepare_image(data, CONFIG).sent_width == 20


# -- refusals ----------------------------------------------------------------------------------


def test_format_not_allowed_names_it() -> None:
    data = encode(Image.new("RGB", (10, 10)), "JPEG")
    with pytest.raises(ImageError, match="JPEG is not allowed") as caught:
        prepare_image(data, ImageConfig(formats=["PNG"]), label="cat.jpg")
    assert "cat.jpg" in str(caught.value)
    with pytest.raises(ImageError, match="JPEG"):
        image_info(data, ImageConfig(formats=["png"]))


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_image_is_refused(fmt: str) -> None:
    data = encode(noise((256, 256)), fmt)
    cut = data[: len(data) // 2]
    # The header is intact: the cheap check passes, the decode does not.
    assert image_info(cut, CONFIG) == (fmt, 256, 256)
    with pytest.raises(ImageError, match="truncated or corrupt"):
        prepare_image(cut, CONFIG, label="cut")


@pytest.mark.parametrize("keep", [8, 20, 40])
def test_cut_header_is_refused(keep: int) -> None:
    data = encode(Image.new("RGB", (50, 50)), "PNG")
    with pytest.raises(ImageError):
        prepare_image(data[:keep], CONFIG)


@pytest.mark.parametrize(
    "data",
    # Seeded noise: the same bytes on every run (and in every test worker).
    [
        b"not an image at all",
        random.Random(7).randbytes(2048),
        b"\x89PNG\r\n\x1a\n" + random.Random(8).randbytes(64),
    ],
    ids=["text", "noise", "png-signature-then-noise"],
)
def test_garbage_is_refused(data: bytes) -> None:
    with pytest.raises(ImageError):
        prepare_image(data, CONFIG)


def test_empty_bytes_are_refused() -> None:
    with pytest.raises(ImageError, match="empty"):
        prepare_image(b"", CONFIG)


def test_byte_limit_is_checked_first() -> None:
    config = ImageConfig(max_bytes=1000)
    with pytest.raises(ImageError, match=r"over the limit of 1000 bytes \(images.max_bytes\)"):
        prepare_image(b"x" * 1001, config)  # not an image either: the size is what is reported
    with pytest.raises(ImageError, match="max_bytes"):
        prepare_image(encode(noise((100, 100)), "PNG"), config)


def test_header_bomb_is_refused_from_the_header(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = png_bomb(100_000, 100_000, rows=1)  # a few hundred bytes claiming 10^10 pixels
    assert len(bomb) < 2000
    before = Image.MAX_IMAGE_PIXELS
    decoded = decoded_sizes(monkeypatch)
    for call in (prepare_image, image_info):
        with pytest.raises(ImageError, match="pixels"):
            call(bomb, CONFIG)
    assert decoded == []
    assert before == Image.MAX_IMAGE_PIXELS  # Pillow's process-wide setting is left alone


@pytest.mark.parametrize("side", [8_000, 10_000])
def test_real_bomb_is_refused_by_max_pixels(side: int, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = png_bomb(side, side)  # every row present: it would really decode to side^2 pixels
    assert len(bomb) < 100_000
    decoded = decoded_sizes(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow's own warning for 10000^2; ours refuses
        with pytest.raises(ImageError, match="max_pixels"):
            prepare_image(bomb, CONFIG)
    assert decoded == []  # refused from its header: not one pixel decoded


def test_bomb_warning_as_error_is_an_image_error() -> None:
    bomb = png_bomb(10_000, 10_000, rows=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ImageError, match="too many pixels"):
            prepare_image(bomb, ImageConfig(max_pixels=200_000_000))


def test_small_pixel_limit() -> None:
    data = encode(Image.new("RGB", (200, 200)), "PNG")
    with pytest.raises(ImageError, match="40000 pixels"):
        prepare_image(data, ImageConfig(max_pixels=39_999))
    assert prepare_image(data, ImageConfig(max_pixels=40_000)).sent_width == 200


def test_errors_name_the_label_and_the_location() -> None:
    with pytest.raises(ImageError) as caught:
        prepare_image(
            b"garbage", CONFIG, label="holiday.png", where={"scene": 1, "message": 2, "part": 3}
        )
    error = caught.value
    assert isinstance(error, DocumentError)
    assert (error.scene_index, error.message_index, error.part_index) == (1, 2, 3)
    assert str(error).startswith("scene 1, message 2, part 3: holiday.png: ")
    with pytest.raises(ImageError) as caught:
        image_info(b"garbage", CONFIG, where={"scene_index": 0, "part_index": 4})
    assert (caught.value.scene_index, caught.value.part_index) == (0, 4)


# -- the rest ----------------------------------------------------------------------------------


def test_describe() -> None:
    data = encode(Image.new("RGB", (800, 600)), "PNG")
    prepared = prepare_image(data, CONFIG)
    size = f"{round(len(data) / 1024)} KB" if len(data) >= 1024 else f"{len(data)} B"
    assert prepared.describe("https://host/a/photo.png?x=1") == (
        f"[image: photo.png (PNG, 800x600, {size}) from https://host/a/photo.png?x=1]"
    )
    assert isinstance(prepared, PreparedImage)


def test_concurrent_preparation_gives_the_same_result() -> None:
    data = encode(noise((300, 200)), "PNG")
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda _: prepare_image(data, ImageConfig(max_side=100)), range(16))
        )
    assert len({result.data for result in results}) == 1


def test_importing_the_module_does_not_import_pillow() -> None:
    code = (
        "import sys, memreader, memreader.parts.images, memreader.parts.audio; "
        "print('PIL' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_multi_picture_jpeg_is_a_jpeg() -> None:
    # Phones and cameras write MPO: a JPEG with more pictures appended; Pillow names it apart.
    first, second = Image.new("RGB", (60, 40), "red"), Image.new("RGB", (60, 40), "blue")
    buffer = io.BytesIO()
    first.save(buffer, "MPO", save_all=True, append_images=[second])
    assert Image.open(io.BytesIO(buffer.getvalue())).format == "MPO"
    prepared = prepare_image(buffer.getvalue(), ImageConfig(formats=["JPEG"]))
    assert (prepared.format, prepared.media_type) == ("JPEG", "image/jpeg")
    assert from_data_url(prepared.data_url()).convert("RGB").getpixel((30, 20))[0] > 200
