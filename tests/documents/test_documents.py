"""Documents from untrusted input: local paths off by default and confined to allowed roots,
only regular files, size limits everywhere, and zip/pdf bombs refused before conversion."""

from __future__ import annotations

import base64
import io
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memreader import DocumentError, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.documents import normalize_doc
from memreader.documents.loader import convert_bytes
from memreader.fetch.local_files import DocumentAccess, DocumentLimits
from tests.common import HASH_EMBEDDER
from tests.docgen import zip_bytes
from tests.llm_server import finishes_within
from tests.work_counting import inflated_bytes

INFO = {"user_id": "u1", "session_id": "s1"}
MIB = 1024 * 1024


def run_with_deadline(call: Callable[[], Any], seconds: float = 60.0) -> Any:
    """``call()``, or a test failure instead of a hang if it does not return in time (a
    safety net against a hang, generous enough for a loaded machine: work is counted)."""
    return finishes_within(seconds, call)


def options(**config: Any) -> DocumentAccess:
    """A reader config, which is what the reader passes normalize_doc as its access."""
    return SimpleStructMemReaderConfig(embedder=None, **config)


# -- fixtures built by code ------------------------------------------------------------------

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    'package/2006/content-types"><Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
    '"application/xml"/><Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
    '.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)


def docx_xml(*paragraphs: str) -> str:
    body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in paragraphs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.'
        f'openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>'
    )


def docx_bytes(*paragraphs: str, bomb: tuple[str, int] | None = None) -> bytes:
    members = {
        "[Content_Types].xml": _CONTENT_TYPES.encode(),
        "_rels/.rels": _RELS.encode(),
        "word/document.xml": docx_xml(*paragraphs).encode(),
    }
    return zip_bytes(members, bomb)


def pdf_bytes(content: bytes) -> bytes:
    """A one-page pdf whose content stream (``content``, deflated) draws text in Helvetica."""
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def file_part(data: bytes, filename: str) -> dict[str, Any]:
    return {
        "type": "file",
        "file": {"file_data": base64.b64encode(data).decode(), "filename": filename},
    }


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """An allowed folder with a note, a secret outside it, and a symlink from inside to it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.txt"
    note.write_text("Tea notes: green, oolong.", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret-xyz.txt"
    secret.write_text("API_KEY=sk-do-not-read", encoding="utf-8")
    link = docs / "link.txt"
    link.symlink_to(secret)
    return {"docs": docs, "note": note, "secret": secret, "link": link, "outside": outside}


# -- local paths -----------------------------------------------------------------------------


def test_local_paths_are_off_by_default(tree: dict[str, Path]) -> None:
    config = SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER)
    assert config.allow_local_paths is False and config.allowed_roots == []
    reader = SimpleStructMemReader(config)
    # A string naming a file is plain text: the file is not read.
    [[item]] = reader.get_memory([str(tree["secret"])], type="doc", info=INFO)
    assert item.memory == str(tree["secret"]) and "sk-do-not-read" not in item.memory
    with pytest.raises(DocumentError, match="local paths are disabled") as info:
        reader.get_memory(
            [{"type": "file", "file": {"path": str(tree["note"])}}], type="doc", info=INFO
        )
    assert (info.value.scene_index, info.value.message_index) == (0, 0)
    # The bare function is as strict as the config.
    [scene] = normalize_doc([str(tree["secret"])])
    assert scene.messages[0].parts[0].text == str(tree["secret"])


def test_allowed_roots_read_files_under_them(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = options(allow_local_paths=True, allowed_roots=[str(tree["docs"])])
    scenes = normalize_doc(
        [str(tree["note"]), [{"type": "file", "file": {"path": str(tree["note"])}}]], opts
    )
    for scene in scenes:
        part = scene.messages[0].parts[0]
        assert part.text == "Tea notes: green, oolong." and part.doc_path == str(tree["note"])
    # A root may be a single file.
    only_note = options(allow_local_paths=True, allowed_roots=[str(tree["note"])])
    assert normalize_doc([str(tree["note"])], only_note)[0].messages[0].parts[0].doc_path
    # "~" is expanded.
    monkeypatch.setenv("HOME", str(tree["docs"].parent))
    home = options(allow_local_paths=True, allowed_roots=["~/docs"])
    assert normalize_doc([str(tree["note"])], home)[0].messages[0].parts[0].doc_path
    other = tree["docs"] / "other.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(DocumentError, match="outside the allowed roots"):
        normalize_doc([str(other)], only_note)


@pytest.mark.parametrize(
    "target",
    ["/etc/passwd", "../../../../../../../../etc/passwd", "link", "/proc/self/environ", "secret"],
)
def test_files_outside_the_roots_are_refused_without_naming_them(
    tree: dict[str, Path], target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree["docs"])
    path = {"link": str(tree["link"]), "secret": str(tree["secret"])}.get(target, target)
    opts = options(allow_local_paths=True, allowed_roots=[str(tree["docs"])])
    for doc in ([path], [[{"type": "file", "file": {"path": path}}]]):
        with pytest.raises(DocumentError) as info:
            normalize_doc(["fine", *doc], opts)
        message = str(info.value)
        assert "outside the allowed roots" in message
        assert message.startswith("scene 1, message 0:"), message
        assert info.value.scene_index == 1 and info.value.message_index == 0
        # Where a symlink leads, or the resolved path, never shows.
        assert "secret-xyz" not in message or target == "secret"
        assert str(tree["outside"]) not in message and "/etc/" not in message


def test_system_files_are_refused_even_without_roots(tree: dict[str, Path]) -> None:
    opts = options(allow_local_paths=True)
    # Without roots any ordinary file is allowed (the user opted in)...
    assert (
        normalize_doc([str(tree["secret"])], opts)[0]
        .messages[0]
        .parts[0]
        .text.startswith("API_KEY")
    )
    # ...but /proc/self/environ reports size 0 and holds the process's secrets.
    for path in ("/proc/self/environ", "/dev/zero", "/dev/urandom"):
        with pytest.raises(DocumentError, match="system file") as info:
            part = {"type": "file", "file": {"path": path}}
            run_with_deadline(lambda: normalize_doc([part], opts))  # noqa: B023 - called at once
        assert info.value.scene_index == 0


def test_a_fifo_is_refused_without_blocking(tree: dict[str, Path]) -> None:
    fifo = tree["docs"] / "pipe.txt"
    os.mkfifo(fifo)
    opts = options(allow_local_paths=True, allowed_roots=[str(tree["docs"])])
    with pytest.raises(DocumentError, match=r"'pipe\.txt' is not a regular file"):
        run_with_deadline(
            lambda: normalize_doc([{"type": "file", "file": {"path": str(fifo)}}], opts), 5
        )


# -- max_file_bytes --------------------------------------------------------------------------


def test_max_file_bytes_is_honoured_for_paths_and_file_data(tree: dict[str, Path]) -> None:
    big = tree["docs"] / "big.txt"
    big.write_text("tea " * 2500, encoding="utf-8")  # 10 KB
    small = tree["docs"] / "small.txt"
    small.write_text("tea " * 200, encoding="utf-8")
    opts = options(allow_local_paths=True, max_file_bytes=1000)
    assert normalize_doc([str(small)], opts)[0].messages[0].parts[0].text == "tea " * 200
    with pytest.raises(DocumentError, match=r"'big.txt' is 10000 bytes, over the max_file_bytes"):
        normalize_doc([str(big)], opts)
    payload = b"tea " * 2500
    encoded = base64.b64encode(payload).decode()
    # Refused from the encoded length, before decoding: base64 and data URLs alike.
    for data in (encoded, "data:text/plain;base64," + encoded):
        with pytest.raises(DocumentError, match=r"max_file_bytes limit \(1000\): 13336 encoded"):
            normalize_doc(
                [{"type": "file", "file": {"file_data": data, "filename": "a.txt"}}], opts
            )
    # A data URL that is not base64 is percent-encoded text, held to the same limit.
    plain = {"file_data": "data:text/plain," + "tea%20" * 400, "filename": "a.txt"}
    with pytest.raises(DocumentError, match="file_data is 1600 bytes, over the max_file_bytes"):
        normalize_doc([{"type": "file", "file": plain}], opts)
    plain["file_data"] = "data:text/plain,tea%20time"
    assert (
        normalize_doc([{"type": "file", "file": plain}], opts)[0].messages[0].parts[0].text
        == "tea time"
    )


def test_reads_stop_past_the_limit_whatever_size_the_file_reports(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tree["docs"] / "grows.txt"
    big.write_bytes(b"x" * 5000)
    real_fstat = os.fstat

    def lying_fstat(fd: int) -> os.stat_result:
        # Like procfs: a regular file that says it is empty.
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 0, *info[7:]))

    monkeypatch.setattr("memreader.documents.loader.os.fstat", lying_fstat)
    reads: list[int] = []
    real_fdopen = os.fdopen

    class CountingFile:
        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            self.file = real_fdopen(fd, *args, **kwargs)

        def __enter__(self) -> CountingFile:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def read(self, size: int = -1) -> bytes:
            data: bytes = self.file.read(size)
            reads.append(len(data))
            return data

    monkeypatch.setattr("memreader.documents.loader.os.fdopen", CountingFile)
    with pytest.raises(
        DocumentError, match=r"'grows\.txt' is over the max_file_bytes limit \(1000\)"
    ):
        normalize_doc([str(big)], options(allow_local_paths=True, max_file_bytes=1000))
    assert sum(reads) == 1001


# -- archives, pdfs, converted text ----------------------------------------------------------


def test_a_docx_bomb_is_refused_without_expanding_it(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = docx_bytes("Hello", bomb=("word/media/filler.bin", 200))
    assert len(bomb) < 250_000  # 200 KB that unpacks to 200 MiB
    with inflated_bytes(monkeypatch) as inflated, pytest.raises(DocumentError) as info:
        run_with_deadline(lambda: normalize_doc([file_part(bomb, "report.docx")]))
    assert ".docx file unpacks to 209716" in str(info.value)
    assert "over the max_unpacked_bytes limit (209715200)" in str(info.value)
    assert str(info.value).startswith("scene 0, message 0:")
    assert inflated.bytes < 1024 * 1024, inflated.bytes  # work counted, not timed: of 200 MiB
    # Just under the size limit, the ratio refuses it.
    bomb = docx_bytes("Hello", bomb=("word/media/filler.bin", 150))
    with pytest.raises(
        DocumentError,
        match=r"\.docx file expands \d+ times .* over the "
        r"max_compression_ratio limit \(100\)",
    ):
        run_with_deadline(lambda: normalize_doc([file_part(bomb, "report.docx")]))


def test_archive_limits_each_name_themselves() -> None:
    random_member = os.urandom(2 * MIB)  # incompressible: only the unpacked size is over
    data = zip_bytes(
        {"word/document.xml": docx_xml("x").encode(), "word/media/a.bin": random_member}
    )
    with pytest.raises(DocumentError, match=r"unpacks to \d+ bytes, over the max_unpacked_bytes"):
        normalize_doc([file_part(data, "a.docx")], DocumentAccess(max_unpacked_bytes=MIB))
    many = zip_bytes({f"ppt/slides/s{i}.xml": b"<x/>" for i in range(50)})
    with pytest.raises(DocumentError, match="50 archive members, over the max_archive_members"):
        normalize_doc([file_part(many, "deck.pptx")], DocumentAccess(max_archive_members=10))
    # Many small members that together expand far too much: the archive's ratio counts.
    spread = zip_bytes({f"xl/worksheets/s{i}.xml": b" " * 300_000 for i in range(8)})
    with pytest.raises(DocumentError, match="max_compression_ratio"):
        normalize_doc([file_part(spread, "book.xlsx")])


def test_other_zips_are_refused_by_content_not_name() -> None:
    archive = zip_bytes({"inner.zip": b"PK...", "a.txt": b"tea"})
    for name in ("bundle.zip", "bundle.pdf", "bundle", "bundle.html"):
        with pytest.raises(DocumentError, match=r"is a zip archive; only \.docx, \.epub, \.pptx"):
            normalize_doc([file_part(archive, name)])


def test_a_pdf_stream_bomb_is_refused_without_expanding_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ops = b"BT /F1 12 Tf 72 720 Td (Emily drinks oolong.) Tj ET\n"
    assert (
        "Emily drinks oolong."
        in normalize_doc([file_part(pdf_bytes(ops), "a.pdf")])[0].messages[0].parts[0].text
    )
    bomb = pdf_bytes(ops + b" " * (8 * MIB))
    assert len(bomb) < 100_000
    with (
        inflated_bytes(monkeypatch) as inflated,
        pytest.raises(DocumentError, match=r"\.pdf file has a stream that expands more than 100"),
    ):
        run_with_deadline(lambda: normalize_doc([file_part(bomb, "a.pdf")]))
    # Work counted, not timed: inflating stops a little past the ratio (of 8 MiB).
    assert inflated.bytes < 2 * 1024 * 1024, inflated.bytes
    # The same bytes without a name are recognised by their content.
    with pytest.raises(DocumentError, match="max_compression_ratio"):
        normalize_doc([file_part(bomb, "")])
    with pytest.raises(DocumentError, match="inflate to more than 1000 bytes, over the max_unp"):
        normalize_doc(
            [file_part(pdf_bytes(ops * 100), "a.pdf")], DocumentAccess(max_unpacked_bytes=1000)
        )


def test_converted_text_is_held_to_max_document_chars(tree: dict[str, Path]) -> None:
    # A docx under every archive limit whose text is still too long.
    paragraphs = [f"Paragraph {i} about tea." for i in range(400)]
    data = docx_bytes(*paragraphs)
    [scene] = normalize_doc([file_part(data, "tea.docx")])
    assert "Paragraph 399 about tea." in scene.messages[0].parts[0].text
    with pytest.raises(
        DocumentError,
        match=r"\.docx file converts to \d+ characters, over the "
        r"max_document_chars limit \(5000\)",
    ):
        normalize_doc([file_part(data, "tea.docx")], DocumentAccess(max_document_chars=5000))
    note = tree["docs"] / "long.md"
    note.write_text("tea " * 2000, encoding="utf-8")
    with pytest.raises(DocumentError, match=r"\.md file converts to 8000 characters"):
        normalize_doc([str(note)], options(allow_local_paths=True, max_document_chars=5000))


def test_small_real_office_files_still_convert() -> None:
    import openpyxl
    from pptx import Presentation

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["name", "drink"])
    sheet.append(["Emily", "oolong"])
    xlsx = io.BytesIO()
    book.save(xlsx)
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Tea tasting"
    pptx = io.BytesIO()
    deck.save(pptx)
    scenes = normalize_doc(
        [
            file_part(xlsx.getvalue(), "drinks.xlsx"),
            file_part(pptx.getvalue(), "deck.pptx"),
            file_part(docx_bytes("Emily drinks oolong."), "note.docx"),
        ]
    )
    texts = [scene.messages[0].parts[0].text for scene in scenes]
    assert "| Emily | oolong |" in texts[0]
    assert "Tea tasting" in texts[1]
    assert "Emily drinks oolong." in texts[2]


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_compression_ratio"):
        DocumentLimits(max_compression_ratio=float("nan"))
    with pytest.raises(ValueError, match="max_file_bytes"):
        DocumentLimits(max_file_bytes=0)
    with pytest.raises(DocumentError, match="over the max_file_bytes limit"):
        convert_bytes(b"x" * 11, ".txt", limits=DocumentLimits(max_file_bytes=10))
