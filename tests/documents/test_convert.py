"""Conversion of real files (written by python-docx, reportlab, python-pptx, openpyxl: see
:mod:`tests.docgen`), hostile files refused with typed errors, CJK text windowed without
broken characters, and the heading trail of converted Markdown.

tests/documents/test_documents.py covers paths, roots and limits with hand-built archives; this file
covers what real converters produce and what markitdown does with damaged input.
"""

from __future__ import annotations

import base64
import io
import random
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memreader import DocumentError, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.documents import DocumentAccess, normalize_doc
from memreader.documents import headings as headings_module
from memreader.documents.headings import Heading, heading_trail
from memreader.documents.loader import convert_bytes, load_path
from memreader.items import TextualMemoryItem
from memreader.windowing.chunking import RecursiveSplitter
from memreader.windowing.tokens import get_tokenizer
from memreader.windowing.windows import Unit, Windower
from tests import docgen
from tests.work_counting import (
    CountingList,
    CountingPattern,
    assert_linear,
    inflated_bytes,
    lines_executed,
)

INFO = {"user_id": "u1", "session_id": "s1"}
#: load_path reads local files only where the access allows them.
LOCAL_FILES = DocumentAccess(allow_local_paths=True)
REPLACEMENT = "\ufffd"

ZH_PARAGRAPHS = [
    "本季度的销售额比去年同期增长了百分之十二，主要来自华东地区。",
    "团队在上海和北京分别召开了两次项目评审会议，讨论了预算和人员安排。",
    "安全审计发现了三个需要尽快修复的问题，其中一个涉及用户数据。",
]


def doc_reader(**window: Any) -> SimpleStructMemReader:
    """The simple reader as the brief uses it: no embedder, local paths allowed."""
    config: dict[str, Any] = {"embedder": None, "allow_local_paths": True}
    if window:
        config["window"] = window
    return SimpleStructMemReader(SimpleStructMemReaderConfig(**config))


def read_doc(path: Path, **window: Any) -> list[TextualMemoryItem]:
    [items] = doc_reader(**window).get_memory([str(path)], type="doc", info=INFO)
    return items


def squeeze(text: str) -> str:
    """``text`` without white space: pdf extraction wraps lines wherever the page ends."""
    return re.sub(r"\s+", "", text)


def assert_exact_sources(items: list[TextualMemoryItem], converted: str) -> None:
    """Every source of every item re-extracts its content from the converted text."""
    assert items
    for item in items:
        assert REPLACEMENT not in item.memory
        for source in item.metadata.sources:
            assert source.span is not None
            start, end = source.span
            assert converted[start:end] == source.content
            assert REPLACEMENT not in source.content


def file_part(data: bytes, filename: str) -> dict[str, Any]:
    """An inline file part, as a client would send it."""
    return {
        "type": "file",
        "file": {"file_data": base64.b64encode(data).decode(), "filename": filename},
    }


def make_zip(members: dict[str, bytes]) -> bytes:
    """A plain deflated zip of ``members``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


# -- real files convert ------------------------------------------------------------------------


def test_docx_headings_become_markdown_lines_over_their_text(tmp_path: Path) -> None:
    data = docgen.make_docx(
        ["Revenue grew in every region.", "Cloud costs rose 12%.", "Hiring resumes in May."],
        headings=[(0, 1, "Quarterly Report"), (1, 2, "Results"), (1, 3, "Costs"), (2, 2, "Plans")],
    )
    text = convert_bytes(data, ".docx")
    lines = text.splitlines()
    for line in ("# Quarterly Report", "## Results", "### Costs", "## Plans"):
        assert line in lines, text
    for paragraph in ("Revenue grew in every region.", "Cloud costs rose 12%.", "Hiring resumes"):
        assert paragraph in text
    # The converted Markdown gives each paragraph its section.
    index = heading_trail(text)
    assert index.at(text.index("Cloud costs")) == ("Quarterly Report", "Results", "Costs")
    assert index.context(text.index("Hiring")) == "Quarterly Report > Plans"
    assert index.at(text.index("Revenue")) == ("Quarterly Report",)
    # load_path reads the same bytes into the same text.
    path = tmp_path / "report.docx"
    path.write_bytes(data)
    part = load_path(str(path), access=LOCAL_FILES, scene_index=0, message_index=0)
    assert part.text == text and part.doc_path == str(path)


def test_chinese_pdf_keeps_its_characters_and_exact_spans(tmp_path: Path) -> None:
    data = docgen.make_pdf(["\n\n".join(ZH_PARAGRAPHS), ZH_PARAGRAPHS[0]], chinese=True)
    text = convert_bytes(data, ".pdf")
    assert REPLACEMENT not in text
    for paragraph in ZH_PARAGRAPHS:
        assert paragraph in squeeze(text), text
    path = tmp_path / "报告.pdf"
    path.write_bytes(data)
    items = read_doc(path)
    assert_exact_sources(items, text)
    assert all(source.doc_path == str(path) for item in items for source in item.metadata.sources)
    assert "".join(ZH_PARAGRAPHS) in squeeze("".join(item.memory for item in items))


def test_latin_pdf_pages_convert_in_order() -> None:
    data = docgen.make_pdf(["Emily drinks oolong every morning.", "Page two: green tea at noon."])
    text = convert_bytes(data, ".pdf")
    first, second = text.index("Emily drinks oolong"), text.index("Page two: green tea")
    assert first < second
    # pdfminer ends each page with a form feed; it is kept (spans index the text as it is).
    assert "\x0c" in text[first:second]


@pytest.mark.parametrize(
    ("make", "extension", "fragments"),
    [
        (
            lambda: docgen.make_pptx([("Tea tasting", "Oolong first"), ("Results", "Green won")]),
            ".pptx",
            ["# Tea tasting", "Oolong first", "# Results", "Green won", "<!-- Slide number: 2"],
        ),
        (
            lambda: docgen.make_xlsx([["name", "drink", "cups"], ["Emily", "oolong", 3]], "Tea"),
            ".xlsx",
            ["## Tea", "| name | drink | cups |", "| Emily | oolong | 3 |"],
        ),
        (
            lambda: docgen.make_html("Report", [("Costs", "Up 12% & rising."), ("下一步", "招聘")]),
            ".html",
            ["# Report", "## Costs", "Up 12% & rising.", "## 下一步", "招聘"],
        ),
        (
            lambda: docgen.make_csv([["name", "note"], ["Emily", "oolong, green"], ["李", "绿茶"]]),
            ".csv",
            ["| name | note |", "| Emily | oolong, green |", "| 李 | 绿茶 |"],
        ),
    ],
    ids=["pptx", "xlsx", "html", "csv"],
)
def test_office_and_web_formats_convert(
    make: Callable[[], bytes], extension: str, fragments: list[str], tmp_path: Path
) -> None:
    data = make()
    text = convert_bytes(data, extension)
    for fragment in fragments:
        assert fragment in text, text
    assert REPLACEMENT not in text
    # The same file read by path, and sent inline through the reader, gives the same text.
    path = tmp_path / f"file{extension}"
    path.write_bytes(data)
    assert load_path(str(path), access=LOCAL_FILES, scene_index=0, message_index=0).text == text
    items = read_doc(path)
    assert_exact_sources(items, text)


def test_images_convert_to_no_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without an LLM or exiftool, markitdown has nothing to say about a picture; a damaged or
    # oversized one is not decoded at all (its pixels are never read), so it is no risk here.
    from PIL import ImageFile

    for data in (docgen.make_png(), docgen.make_jpeg(), docgen.truncated_png()):
        assert convert_bytes(data, ".png") == ""
    loads: list[object] = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda image, *a: loads.append(image))
    with inflated_bytes(monkeypatch) as inflated:
        assert convert_bytes(docgen.decompression_bomb_png(), ".png") == ""
    assert loads == [] and inflated.bytes == 0, "the bomb's pixels were decoded"


# -- hostile files -----------------------------------------------------------------------------


def refused(call: Callable[[], object]) -> DocumentError:
    """The DocumentError ``call`` raises; any other exception (or none) fails the test."""
    with pytest.raises(DocumentError) as info:
        call()
    assert type(info.value) is DocumentError
    return info.value


def test_a_corrupt_pdf_is_a_document_error() -> None:
    error = refused(lambda: convert_bytes(docgen.corrupt_pdf(), ".pdf"))
    assert str(error).startswith("cannot convert .pdf: File conversion failed"), str(error)
    assert "PdfConverter" in str(error)
    # Without a name it is recognised by its header and refused the same way.
    assert "PdfConverter" in str(refused(lambda: convert_bytes(docgen.corrupt_pdf(), "")))
    # A real pdf cut short, too.
    cut = docgen.make_pdf(["Emily drinks oolong. " * 40])[:900]
    assert "cannot convert .pdf" in str(refused(lambda: convert_bytes(cut, ".pdf")))


def test_a_truncated_docx_is_a_document_error() -> None:
    error = refused(
        lambda: normalize_doc(
            [[{"type": "text", "text": "intro"}, file_part(docgen.truncated_docx(), "a.docx")]]
        )
    )
    assert (
        str(error)
        == "scene 0, message 1: .docx file is not a valid zip archive: File is not a zip file"
    )
    assert (error.scene_index, error.message_index) == (0, 1)


def test_a_zip_bomb_named_docx_is_refused_without_expanding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = docgen.zip_bomb_docx()
    assert len(data) < 2 * 1024 * 1024  # ~1 MB on disk for 1 GiB unpacked
    path = tmp_path / "report.docx"
    path.write_bytes(data)
    with inflated_bytes(monkeypatch) as inflated:
        error = refused(lambda: read_doc(path))
    assert re.search(
        r"\.docx file unpacks to 10\d{8} bytes, over the max_unpacked_bytes limit \(209715200\)",
        str(error),
    ), str(error)
    # Work counted, not timed: its index is read, its gigabyte never inflated (a few MB are).
    assert inflated.bytes < 8 * 1024 * 1024, inflated.bytes


def test_missing_files_and_directories_are_document_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pdf"
    error = refused(
        lambda: load_path(str(missing), access=LOCAL_FILES, scene_index=0, message_index=0)
    )
    assert (
        str(error)
        == "scene 0, message 0: cannot read file 'missing.pdf': No such file or directory"
    )
    folder = tmp_path / "folder.docx"
    folder.mkdir()
    error = refused(
        lambda: load_path(str(folder), access=LOCAL_FILES, scene_index=0, message_index=0)
    )
    assert str(error) == "scene 0, message 0: cannot read file 'folder.docx': Is a directory"
    # Through the reader, an explicit file part is refused the same way...
    reader = doc_reader()
    for path, message in ((missing, "No such file"), (folder, "Is a directory")):
        error = refused(
            lambda path=path: reader.get_memory(
                [{"type": "file", "file": {"path": str(path)}}], type="doc", info=INFO
            )
        )
        assert message in str(error)
    # ...while a bare string that names no regular file is text, as documented.
    [[item]] = reader.get_memory([str(folder)], type="doc", info=INFO)
    assert item.memory == str(folder)


def test_zips_that_are_not_office_files_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = make_zip({"notes/a.txt": b"tea", "b.txt": b"oolong"})
    for extension in (".docx", ".pptx", ".xlsx", ".epub"):
        error = refused(lambda extension=extension: convert_bytes(plain, extension))
        assert str(error).startswith(f"cannot convert {extension}: File conversion failed"), error
    assert "is a zip archive; only .docx" in str(refused(lambda: convert_bytes(plain, ".zip")))
    # markitdown's fallback for a failed office file is to unpack the zip and convert every
    # member, nested archives included, past the archive checks: a docx-named zip holding a
    # zip bomb (300 MiB of zeros in 300 KB) must be refused without expanding it.
    nested = make_zip({"inner.zip": docgen.zip_bomb_docx(300), "notes.txt": b"hello"})
    assert len(nested) < 1024 * 1024
    with inflated_bytes(monkeypatch) as inflated:
        error = refused(lambda: convert_bytes(nested, ".docx"))
    assert "cannot convert .docx" in str(error) and "Content from the zip" not in str(error)
    assert inflated.bytes < 8 * 1024 * 1024, inflated.bytes  # of 300 MiB


def test_hostile_generators_build_small_files() -> None:
    # How fast they build is the test's own timeout's business, not an assert's.
    from PIL import Image

    bomb = docgen.decompression_bomb_png()
    assert len(bomb) < 200_000
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(bomb))
    with pytest.raises(OSError):
        Image.open(io.BytesIO(docgen.truncated_png())).load()
    assert len(docgen.zip_bomb_docx()) < 2 * 1024 * 1024


# -- CJK windows -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_chinese_pdf() -> tuple[bytes, str]:
    data = docgen.make_long_pdf(8, chinese=True)
    return data, convert_bytes(data, ".pdf")


@pytest.mark.parametrize("splitter", ["recursive", "tokens"])
def test_long_chinese_pdf_windows_stay_in_budget_without_broken_characters(
    long_chinese_pdf: tuple[bytes, str], splitter: str, tmp_path: Path
) -> None:
    data, text = long_chinese_pdf
    assert len(text) > 5000 and REPLACEMENT not in text
    path = tmp_path / "长文.pdf"
    path.write_bytes(data)
    count = get_tokenizer().count
    items = read_doc(path, max_tokens=64, overlap_tokens=8, splitter=splitter)
    assert len(items) > 50
    assert all(count(item.memory) <= 64 for item in items)
    assert_exact_sources(items, text)
    # Together the windows cover the whole text, in order.
    covered = 0
    for item in items:
        for source in item.metadata.sources:
            assert source.span is not None
            assert source.span[0] <= covered
            covered = max(covered, source.span[1])
    assert covered == len(text)


def test_windower_cuts_chinese_at_character_boundaries(long_chinese_pdf: tuple[bytes, str]) -> None:
    _, text = long_chinese_pdf
    tokenizer = get_tokenizer()
    for splitter in (None, RecursiveSplitter(tokenizer)):
        windows = Windower(64, 8, tokenizer=tokenizer, splitter=splitter).windows([Unit(text)])
        assert len(windows) > 50
        pieces = []
        for window in windows:
            assert window.tokens == tokenizer.count(window.text) <= 64
            assert REPLACEMENT not in window.text
            for segment in window.segments[window.carried :]:
                assert segment.line == text[segment.start : segment.end]
                pieces.append(segment.line)
        assert "".join(pieces) == text


# -- long documents for benchmarks -------------------------------------------------------------


def test_long_documents_have_pages_of_varied_prose() -> None:
    pages = docgen.long_pages(50)
    assert len(pages) == 50
    for _, paragraphs in pages:
        assert 300 <= sum(len(p.split()) for p in paragraphs) <= 500
    sentences = [s for _, paragraphs in pages for p in paragraphs for s in p.split(". ")]
    assert len(set(sentences)) > 0.9 * len(sentences)
    assert docgen.long_pages(3) == docgen.long_pages(3)  # seeded: benchmarks are repeatable
    text = convert_bytes(docgen.make_long_docx(10), ".docx")
    index = heading_trail(text)
    assert len(index.headings) == 12  # ten sections, two with a subsection
    assert index.at(len(text) - 1) == (pages[9][0], "Details of section 10")
    pdf = convert_bytes(docgen.make_long_pdf(3), ".pdf")
    assert pdf.count("\x0c") == 2 and pages[2][0] in pdf


# -- heading trails ----------------------------------------------------------------------------


def test_heading_trail_rules() -> None:
    text = (
        "preamble\n"
        "# Report #\n"  # closing hashes dropped
        "   ## Results\n"  # up to three spaces of indentation
        "    ## not a heading (indented code)\n"
        "#not a heading\n"
        "####### not a heading (seven)\n"
        "```python\n"
        "# a comment in code\n"
        "```\n"
        "### Costs\t\n"
        "~~~~\n"
        "## still code\n"
        "~~~\n"  # shorter than the opening fence: does not close it
        "~~~~~\n"
        "#\n"  # empty heading: ignored
        "## Outlook\r\n"
        "# \\# escaped #\n"
        "``` inline `code` is no fence\n"
        "## After\n"
    )
    index = heading_trail(text)
    assert [(h.level, h.text) for h in index.headings] == [
        (1, "Report"),
        (2, "Results"),
        (3, "Costs"),
        (2, "Outlook"),
        (1, "\\# escaped"),
        (2, "After"),
    ]
    assert index.at(0) == () and index.context(text.index("preamble") + 3) == ""
    assert index.at(text.index("# a comment")) == ("Report", "Results")
    assert index.context(text.index("still code")) == "Report > Results > Costs"
    assert index.at(text.index("## Outlook")) == ("Report", "Outlook")  # closes Results
    assert index.at(len(text)) == ("\\# escaped", "After")
    # A heading counts from the start of its own line.
    start = text.index("### Costs")
    assert index.at(start - 1) == ("Report", "Results") and index.at(start)[-1] == "Costs"


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert heading_trail("# A\n```\n# B\n").at(10) == ("A",)
    assert not heading_trail("").headings and heading_trail("").at(0) == ()


def _document_of(parts: int) -> str:
    return "".join(f"{'#' * (1 + i % 4)} Part {i}\n{'word ' * 40}\n" for i in range(parts))


def test_heading_trail_is_linear_on_large_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    # Work counted, not timed (a timed version failed on a loaded machine): the lines of
    # Python that building the index executes grow linearly with the document, and each
    # lookup reads O(log n) heading offsets.
    index = heading_trail(_document_of(50_000))
    assert len(index.headings) == 50_000
    text_of = {n: _document_of(n) for n in (1_000, 4_000)}
    work = {n: lines_executed(lambda n=n: heading_trail(text_of[n])) for n in (1_000, 4_000)}
    assert_linear(work)
    # The regular expressions (C code, no lines counted) are given each character once or twice.
    for name in ("_LINE", "_CLOSING"):
        monkeypatch.setattr(headings_module, name, CountingPattern(getattr(headings_module, name)))
    text = _document_of(4_000)
    heading_trail(text)
    assert headings_module._LINE.scanned + headings_module._CLOSING.scanned <= 2 * len(text)
    for parts in (1_000, 50_000):
        text = _document_of(parts)
        index = heading_trail(text)
        starts = CountingList(index._starts)
        index._starts = starts
        offsets = [random.Random(1).randrange(len(text)) for _ in range(1_000)]
        contexts = [index.context(offset) for offset in offsets]
        assert all(contexts)
        # bisect reads at most ceil(log2(n + 1)) offsets per lookup.
        assert 0 < starts.reads <= len(offsets) * (parts.bit_length() + 1), (parts, starts.reads)


def naive_headings(text: str) -> list[Heading]:
    """The headings of ``text`` by a plain line-by-line reading of the same rules."""
    out: list[Heading] = []
    fence = ""
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        body = line.lstrip(" ")
        if len(line) - len(body) > 3:
            continue
        run = len(body) - len(body.lstrip(body[:1])) if body else 0
        if body[:1] in ("`", "~") and run >= 3:
            rest = body[run:]
            if fence:
                if body[0] == fence[0] and run >= len(fence) and not rest.strip(" \t\r"):
                    fence = ""
            elif body[0] == "~" or "`" not in rest:
                fence = body[:run]
            continue
        if fence or not body.startswith("#") or run > 6:
            continue
        rest = body[run:]
        if rest and rest[0] not in " \t\r":
            continue
        title = rest.strip(" \t\r")
        stripped = title.rstrip("#")
        if stripped != title and (not stripped or stripped[-1] in " \t"):
            title = stripped
        title = title.strip(" \t")
        if title:
            out.append(Heading(start, run, title))
    return out


def naive_trail(headings: list[Heading], offset: int) -> list[Heading]:
    """The headings in effect at ``offset``: each heading before it that no later heading
    before it closes (one of the same or a higher level)."""
    before = [h for h in headings if h.start <= offset]
    return [
        h
        for i, h in enumerate(before)
        if not any(later.level <= h.level for later in before[i + 1 :])
    ]


_LINES = st.one_of(
    st.builds(
        lambda indent, level, text, closing: f"{' ' * indent}{'#' * level} {text}{closing}",
        st.integers(0, 4),
        st.integers(1, 7),
        st.text("ab #\t\\", max_size=6),
        st.sampled_from(["", " #", " ##", "#", "  ###  "]),
    ),
    st.builds(
        lambda indent, fence, info: f"{' ' * indent}{fence}{info}",
        st.integers(0, 4),
        st.sampled_from(["```", "````", "~~~", "~~~~", "``", "`````"]),
        st.sampled_from(["", "python", " ", "a`b", "~"]),
    ),
    st.text("ab #`~\t\r", max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=25))
def test_heading_trail_matches_a_naive_scan(lines: list[str]) -> None:
    text = "\n".join(lines)
    index = heading_trail(text)
    expected = naive_headings(text)
    assert list(index.headings) == expected
    for offset in range(len(text) + 1):
        trail = naive_trail(expected, offset)
        levels = [h.level for h in trail]
        assert levels == sorted(set(levels))  # strictly increasing
        assert index.at(offset) == tuple(h.text for h in trail)
        assert index.context(offset) == " > ".join(h.text for h in trail)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.text("xyz", min_size=1, max_size=3)), max_size=30))
def test_trail_levels_strictly_increase(headings: list[tuple[int, str]]) -> None:
    text = "".join(f"{'#' * level} {title}\nbody\n" for level, title in headings)
    index = heading_trail(text)
    assert len(index.headings) == len(headings)
    for heading in index.headings:
        levels = [h.level for h in naive_trail(list(index.headings), heading.start)]
        assert levels == sorted(set(levels)) and levels[-1] == heading.level
        assert index.at(heading.start)[-1] == heading.text


def test_os_path_names_are_only_used_as_format_hints(tmp_path: Path) -> None:
    # A Chinese file name picks the converter by its extension like any other.
    path = tmp_path / "季度报告.DOCX"
    path.write_bytes(docgen.make_docx(["收入增长。"], headings=[(0, 1, "季度报告")]))
    text = load_path(str(path), access=LOCAL_FILES, scene_index=0, message_index=0).text
    assert text.startswith("# 季度报告") and "收入增长。" in text


@pytest.mark.parametrize("data", [b"%PDF-1.4\n", b"%PDF-1.4\n1 0 obj\nnot a pdf at all\n"])
def test_a_pdf_read_back_as_its_own_bytes_is_refused(data: bytes) -> None:
    # markitdown falls back to plain text when its pdf converter fails; that text is no pdf's.
    with pytest.raises(DocumentError, match="is not a readable pdf"):
        convert_bytes(data, ".pdf")
