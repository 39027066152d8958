"""Real document files built by code, so the tests need no committed binaries.

Every generator returns the bytes of a file a real tool wrote (python-docx, reportlab,
python-pptx, openpyxl, Pillow), so conversion is tested on what users actually upload, not on
hand-written XML. The hostile generators build damaged or oversized files in well under a
second: bombs are small on disk (compressed zeros) and declare or expand to far more than the
default limits.
"""

from __future__ import annotations

import csv
import html
import io
import random
import struct
import zipfile
import zlib
from collections.abc import Sequence

__all__ = [
    "corrupt_pdf",
    "decompression_bomb_png",
    "long_pages",
    "make_csv",
    "make_docx",
    "make_html",
    "make_jpeg",
    "make_long_docx",
    "make_long_pdf",
    "make_pdf",
    "make_png",
    "make_pptx",
    "make_xlsx",
    "truncated_docx",
    "truncated_png",
    "zip_bomb_docx",
]

MIB = 1024 * 1024


# -- office files ------------------------------------------------------------------------------


def make_docx(paragraphs: Sequence[str], headings: Sequence[tuple[int, int, str]] = ()) -> bytes:
    """A .docx of ``paragraphs`` with ``headings`` inserted: ``(before, level, text)`` puts a
    Word "Heading <level>" paragraph before ``paragraphs[before]`` (``before == len`` appends).

    Word's built-in heading styles are what mammoth maps to ``#`` lines, so these test the
    heading path a user's real documents take.
    """
    from docx import Document

    document = Document()
    by_position: dict[int, list[tuple[int, str]]] = {}
    for before, level, text in headings:
        by_position.setdefault(before, []).append((level, text))
    for index in range(len(paragraphs) + 1):
        for level, text in by_position.get(index, []):
            document.add_heading(text, level=level)
        if index < len(paragraphs):
            document.add_paragraph(paragraphs[index])
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_pptx(slides: Sequence[tuple[str, str]]) -> bytes:
    """A .pptx with one "Title and Content" slide per ``(title, body)``."""
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]
    for title, body in slides:
        slide = deck.slides.add_slide(layout)
        assert slide.shapes.title is not None
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_xlsx(rows: Sequence[Sequence[object]], sheet: str = "Sheet1") -> bytes:
    """A .xlsx with one sheet of ``rows`` (the first is the header)."""
    import openpyxl

    book = openpyxl.Workbook()
    worksheet = book.active
    assert worksheet is not None
    worksheet.title = sheet
    for row in rows:
        worksheet.append(list(row))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# -- pdf ---------------------------------------------------------------------------------------


def make_pdf(pages: Sequence[str], *, chinese: bool = False) -> bytes:
    """A pdf with one page per string (paragraphs split on blank lines, wrapped to the page).

    ``chinese`` sets the text in Adobe's STSong-Light CID font (built into every reader, so
    nothing is embedded), wrapping between any two characters as Chinese text does; pdfminer
    maps its glyphs back to Unicode through the bundled UniGB cmap.
    """
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    if chinese:
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont

        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
        style = ParagraphStyle("body", fontName="STSong-Light", fontSize=11, leading=16)
        style.wordWrap = "CJK"
    else:
        style = ParagraphStyle("body", fontName="Helvetica", fontSize=11, leading=14)
    story: list[object] = []
    for number, page in enumerate(pages):
        if number:
            story.append(PageBreak())
        for paragraph in page.split("\n\n"):
            if paragraph.strip():
                story.append(Paragraph(html.escape(paragraph.strip()), style))
    out = io.BytesIO()
    # invariant=True: no timestamp or random id, so the same pages give the same bytes.
    SimpleDocTemplate(out, pagesize=A4, invariant=True).build(story)
    return out.getvalue()


# -- long documents for benchmarks ---------------------------------------------------------------

_TOPICS = [
    "supply chain",
    "customer retention",
    "cloud costs",
    "hiring",
    "data quality",
    "security review",
    "pricing",
    "onboarding",
]
_SUBJECTS = [
    "The team",
    "Our vendor",
    "The finance group",
    "Each region",
    "The pilot project",
    "Management",
    "The audit",
    "Support staff",
]
_VERBS = [
    "reported",
    "reduced",
    "reviewed",
    "expanded",
    "postponed",
    "measured",
    "questioned",
    "approved",
]
_OBJECTS = [
    "the quarterly budget",
    "latency in the eastern data centre",
    "the backlog of open tickets",
    "churn among small customers",
    "the cost of storage",
    "the plan for the new warehouse",
    "training for new engineers",
    "the contract renewal",
]
_TAILS = [
    "after a long discussion.",
    "by twelve percent compared with last year.",
    "although several risks remain open.",
    "and asked for a follow-up in March.",
    "because the numbers did not add up.",
    "with support from two other departments.",
    "despite delays in the second quarter.",
    "so the board could decide by Friday.",
]
_ZH_SENTENCES = [
    "本季度的销售额比去年同期增长了百分之十二。",
    "团队在上海和北京分别召开了两次项目评审会议。",
    "供应链的延迟主要来自港口的拥堵和运输成本上升。",
    "客户满意度调查显示大多数用户对新版本感到满意。",
    "财务部门建议在下一个季度削减云服务的开支。",
    "新员工的培训计划将于三月份正式启动。",
    "安全审计发现了三个需要尽快修复的问题。",
    "董事会要求在周五之前提交详细的预算报告。",
]


def long_pages(
    pages: int = 50, *, words_per_page: int = 380, chinese: bool = False, seed: int = 0
) -> list[tuple[str, list[str]]]:
    """``pages`` pages of varied prose, each ``(heading, paragraphs)``: ``words_per_page`` words
    and up to one paragraph more (380-490 by default), or for Chinese about twice as many
    characters, so each fits on one A4 page.

    Seeded, so a benchmark reads the same document every run; sentences are recombined from
    parts so paragraphs differ (identical paragraphs would flatter any cache or deduplication).
    """
    rng = random.Random(seed)
    out = []
    for number in range(1, pages + 1):
        topic = rng.choice(_TOPICS)
        heading = f"第{number}章 报告" if chinese else f"Section {number}: {topic.title()}"
        paragraphs: list[str] = []
        size = 0
        while size < words_per_page * (2 if chinese else 1):
            count = rng.randint(3, 7)
            if chinese:
                sentences = [rng.choice(_ZH_SENTENCES) for _ in range(count)]
                paragraph = "".join(sentences)
                size += len(paragraph)
            else:
                sentences = [
                    f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
                    f"for {topic} {rng.choice(_TAILS)}"
                    for _ in range(count)
                ]
                paragraph = " ".join(sentences)
                size += len(paragraph.split())
            paragraphs.append(paragraph)
        out.append((heading, paragraphs))
    return out


def make_long_pdf(pages: int = 50, *, chinese: bool = False, seed: int = 0) -> bytes:
    """A pdf of ``pages`` A4 pages of ~430 words (or ~850 Chinese characters) each."""
    texts = [
        "\n\n".join([heading, *paragraphs])
        for heading, paragraphs in long_pages(pages, chinese=chinese, seed=seed)
    ]
    return make_pdf(texts, chinese=chinese)


def make_long_docx(pages: int = 50, *, seed: int = 0) -> bytes:
    """A docx of ``pages`` sections (a Heading 1 and ~430 words each), every fifth section
    followed by a Heading 2 subsection, so heading trails have two levels."""
    paragraphs: list[str] = []
    headings: list[tuple[int, int, str]] = []
    for number, (heading, body) in enumerate(long_pages(pages, seed=seed), 1):
        headings.append((len(paragraphs), 1, heading))
        half = len(body) // 2
        paragraphs.extend(body[:half])
        if number % 5 == 0:
            headings.append((len(paragraphs), 2, f"Details of section {number}"))
        paragraphs.extend(body[half:])
    return make_docx(paragraphs, headings=headings)


# -- text formats and images ---------------------------------------------------------------------


def make_html(title: str, sections: Sequence[tuple[str, str]]) -> bytes:
    """A UTF-8 HTML page: ``<h1>title</h1>`` then an ``<h2>`` and a ``<p>`` per section."""
    body = "".join(
        f"<h2>{html.escape(heading)}</h2><p>{html.escape(text)}</p>" for heading, text in sections
    )
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"</head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    ).encode()


def make_csv(rows: Sequence[Sequence[object]]) -> bytes:
    """UTF-8 CSV of ``rows`` (quoting where needed, as spreadsheets write it)."""
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def _image(width: int, height: int, image_format: str) -> bytes:
    from PIL import Image

    image = Image.new("RGB", (width, height))
    # A gradient, not a flat colour: a realistic size after compression.
    image.putdata(
        [
            ((x * 255) // max(width, 1), (y * 255) // max(height, 1), 128)
            for y in range(height)
            for x in range(width)
        ]
    )
    out = io.BytesIO()
    image.save(out, format=image_format)
    return out.getvalue()


def make_png(width: int = 64, height: int = 48) -> bytes:
    """A valid RGB PNG of a gradient."""
    return _image(width, height, "PNG")


def make_jpeg(width: int = 64, height: int = 48) -> bytes:
    """A valid RGB JPEG of a gradient."""
    return _image(width, height, "JPEG")


# -- hostile files -----------------------------------------------------------------------------


def corrupt_pdf() -> bytes:
    """A pdf header, the start of a real object, then garbage and no trailer: what a broken
    download or a renamed binary looks like."""
    rng = random.Random(7)
    garbage = bytes(rng.randrange(256) for _ in range(4096))
    return b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\n" + garbage


def truncated_docx() -> bytes:
    """The first half of a real docx: local headers survive, the central directory is gone."""
    data = make_docx(["Emily drinks oolong."] * 20)
    return data[: len(data) // 2]


def truncated_png() -> bytes:
    """A real PNG cut off inside its image data: the header parses, decoding fails."""
    data = make_png(256, 256)
    return data[: len(data) // 2]


def zip_bomb_docx(unpacked_mib: int = 1024) -> bytes:
    """A .docx-shaped zip (content types, rels, a document) plus ``word/media/filler.bin``
    holding ``unpacked_mib`` MiB of zeros: about 1 KB on disk per MiB, built in milliseconds.

    The filler is real deflate data: one block of a MiB of zeros, compressed once and repeated
    (a full flush ends each block on a byte boundary and resets the window, so the copies
    concatenate into one valid stream), with the true CRC. The declared size in the central
    directory is the true size, so this is a bomb by either reading: declared or expanded.
    Members over 4 GiB would need zip64, hence the default of 1 GiB.
    """
    if not 0 < unpacked_mib < 4096:
        raise ValueError("unpacked_mib must be between 1 and 4095")
    with zipfile.ZipFile(
        io.BytesIO(make_docx(["Quarterly report.", "All figures are final."]))
    ) as docx:
        members = {info.filename: docx.read(info) for info in docx.infolist()}
    return zip_bytes(members, bomb=("word/media/filler.bin", unpacked_mib))


def zip_bytes(members: dict[str, bytes], bomb: tuple[str, int] | None = None) -> bytes:
    """A zip of ``members`` (deflated), plus optionally a member of ``bomb[1]`` MiB of zeros.

    The bomb member is written by hand from one deflate block repeated (a full flush resets
    the compressor, so every block is the same bytes): 200 MiB in about 200 KB, built in a
    tenth of a second. It is a real, valid deflate stream with the right CRC.
    """
    entries: list[tuple[str, bytes, int, int]] = []  # name, deflated, size, crc
    for name, data in members.items():
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        entries.append((name, packer.compress(data) + packer.flush(), len(data), zlib.crc32(data)))
    if bomb is not None:
        name, mib = bomb
        zeros = b"\0" * MIB
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
        crc = 0
        for _ in range(mib):
            crc = zlib.crc32(zeros, crc)
        entries.append((name, block * mib + packer.flush(), mib * MIB, crc))
    out = io.BytesIO()
    central = io.BytesIO()
    for name, deflated, size, crc in entries:
        raw_name = name.encode()
        offset = out.tell()
        out.write(
            struct.pack(
                "<4s5H3L2H",
                b"PK\x03\x04",
                20,
                0,
                8,
                0,
                0,
                crc,
                len(deflated),
                size,
                len(raw_name),
                0,
            )
        )
        out.write(raw_name + deflated)
        central.write(
            struct.pack(
                "<4s6H3L5H2L",
                b"PK\x01\x02",
                20,
                20,
                0,
                8,
                0,
                0,
                crc,
                len(deflated),
                size,
                len(raw_name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
        )
        central.write(raw_name)
    start = out.tell()
    out.write(central.getvalue())
    count = len(entries)
    out.write(
        struct.pack(
            "<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central.getvalue()), start, 0
        )
    )
    return out.getvalue()


def decompression_bomb_png(width: int = 20_000, height: int = 20_000) -> bytes:
    """A 1-bit PNG of ``width`` x ``height`` black pixels (400 million by default, over twice
    Pillow's MAX_IMAGE_PIXELS, so ``Image.open`` raises DecompressionBombError) in ~50 KB.

    Written by hand (signature, IHDR, one IDAT of deflated all-zero rows, IEND) so it takes a
    fraction of a second instead of Pillow allocating the whole bitmap.
    """

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">L", len(payload))
            + kind
            + payload
            + struct.pack(">L", zlib.crc32(kind + payload))
        )

    row = b"\0" * (1 + (width + 7) // 8)  # filter byte "none", then packed bits
    packer = zlib.compressobj(9)
    rows_per_piece = max(1, MIB // len(row))
    piece = packer.compress(row * rows_per_piece)
    pieces = [piece]
    done = rows_per_piece
    while done + rows_per_piece <= height:
        pieces.append(packer.compress(row * rows_per_piece))
        done += rows_per_piece
    pieces.append(packer.compress(row * (height - done)))
    pieces.append(packer.flush())
    ihdr = struct.pack(">2L5B", width, height, 1, 0, 0, 0, 0)  # depth 1, greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", b"".join(pieces))
        + chunk(b"IEND", b"")
    )
