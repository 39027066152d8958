"""Readers as pipelines: validation (every PipelineError), changes in Python and YAML, user
steps and their own values, interceptors, factory isolation, and the redact and min_length
steps."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader import (
    ConfigError,
    MemReaderConfigFactory,
    MemReaderFactory,
    PipelineError,
    ReadReport,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    Step,
    StepEvent,
)
from memreader.categories.config import CategoriesConfig
from memreader.config import StepSpec
from memreader.embedders.adapter import with_defaults
from memreader.pipeline import FunctionStep, Pipeline, step
from memreader.steps.filters import MinLength
from memreader.steps.pii import Redact, redact_text
from memreader.steps.runtime import ReaderRuntime, SharedKey
from memreader.steps.spec import build_step
from memreader.steps.state import ReadState
from memreader.testing import HashEmbedder
from tests.common import HASH_EMBEDDER, INFO
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

CHAT = [
    [
        {"role": "user", "content": "I'm Ann, mail me at ann.lee@example.org any time."},
        {"role": "assistant", "content": "Noted. Anything else?"},
        {
            "role": "user",
            "content": "My phone is +1 (555) 123-4567 and my card 4111 1111 1111 1111.",
        },
    ]
]
# What the categorize step embeds on a reader's first call (once).
CATEGORY_DESCRIPTIONS = [c.description for c in CategoriesConfig().all()[:-1]]
DEFAULT = (
    "normalize",
    "parse",
    "window",
    "fast_items",
    "prepare_fine",
    "refine_input",
    "extract",
    "filter",
    "rewrite",
    "fine_items",
    "tool_schema",
    "importance",
    "dedup",
    "embed",
    "categorize",
)


def make_reader(**config: Any) -> SimpleStructMemReader:
    config.setdefault("embedder", HASH_EMBEDDER)
    return SimpleStructMemReader(SimpleStructMemReaderConfig(**config))


def noop(state: ReadState, runtime: ReaderRuntime) -> None:
    return None


# -- validation ---------------------------------------------------------------------------------


def test_the_default_pipeline_and_its_listing() -> None:
    reader = make_reader()
    assert reader.pipeline.names == DEFAULT
    listing = str(reader.pipeline)
    assert listing.splitlines()[2].split() == [
        "3.",
        "window",
        "scenes,",
        "units",
        "->",
        "windows",
        "[fast,",
        "fine]",
    ]
    assert [s.name for s in reader.pipeline.active("fast")] == [
        "normalize",
        "parse",
        "window",
        "fast_items",
        "importance",
        "dedup",
        "embed",
        "categorize",
    ]
    assert [s.name for s in reader.pipeline.active("refine")] == [
        "refine_input",
        "extract",
        "filter",
        "rewrite",
        "fine_items",
        "dedup",
        "embed",
        "categorize",
    ]
    off = make_reader(fine={"hallucination_filter": False, "rewrite": "off"})
    assert "filter" not in off.pipeline and "rewrite" not in off.pipeline


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: p.insert_after("normalize", FunctionStep("parse", noop)),
            "two steps are named 'parse'",
        ),
        (
            lambda p: p.insert_after(
                "normalize", FunctionStep("early", noop, requires=["windows"])
            ),
            "step 'early' requires 'windows', which no earlier step produces",
        ),
        (
            lambda p: p.insert_after(
                "normalize", FunctionStep("early", noop, requires=["windows"], modes=["fast"])
            ),
            "step 'early' requires 'windows', which no earlier step produces (in fast mode)",
        ),
        (
            lambda p: p.remove("window"),
            "cannot remove step 'window': step 'fast_items' requires 'windows', which no earlier "
            "step produces (in fast mode)",
        ),
        (
            lambda p: p.replace("parse", FunctionStep("parse2", noop, requires=["scenes"])),
            "cannot replace step 'parse': step 'window' requires 'units', which no earlier step "
            "produces (in fast mode)",
        ),
        (
            lambda p: p.insert_before("nope", FunctionStep("x", noop)),
            "no step named 'nope'; the steps are: " + ", ".join(DEFAULT),
        ),
        (
            lambda p: p.remove("nope"),
            "no step named 'nope'; the steps are: " + ", ".join(DEFAULT),
        ),
        (
            lambda p: p.append(FunctionStep("odd", noop, modes=["turbo"])),
            "step 'odd' names unknown modes ['turbo']; modes are ('fast', 'fine', 'refine')",
        ),
        (
            lambda p: p.append(MinLength),
            "MinLength is a step class; pass an instance: MinLength()",
        ),
        (
            lambda p: p.append("redact"),
            "a pipeline step must be a named Step instance, got 'redact'",
        ),
        (
            lambda p: p.insert_after("parse", FunctionStep("typo", noop, requires=["unitz"])),
            "step 'typo' requires 'unitz', which no earlier step produces",
        ),
    ],
)
def test_every_bad_change_is_a_pipeline_error_and_changes_nothing(
    change: Any, message: str
) -> None:
    pipeline = make_reader().pipeline
    with pytest.raises(PipelineError) as caught:
        change(pipeline)
    assert str(caught.value) == message
    assert isinstance(caught.value, ConfigError)
    assert pipeline.names == DEFAULT, "a failed change leaves the pipeline as it was"


def test_a_pipeline_is_checked_when_built() -> None:
    with pytest.raises(PipelineError, match="step 'b' requires 'x', which no earlier step"):
        Pipeline([FunctionStep("b", noop, requires=["x"]), FunctionStep("a", noop, produces=["x"])])


# -- user steps -----------------------------------------------------------------------------------


@step("count_words", requires=["units"], produces=["word_count"])
def count_words(state: ReadState, runtime: ReaderRuntime) -> None:
    state.set("word_count", sum(len(u.text.split()) for units in state.units for u in units))


@step("tag_length", requires=["items", "word_count"], produces=["items"])
def tag_length(state: ReadState, runtime: ReaderRuntime) -> None:
    for items in state.items:
        for item in items:
            item.metadata.tags.append(f"words:{state.get('word_count')}")


def test_a_user_step_adds_its_own_value_and_a_later_step_reads_it() -> None:
    reader = make_reader()
    reader.pipeline.insert_after("parse", count_words)
    reader.pipeline.insert_before("embed", tag_length)
    [items] = reader.get_memory(CHAT, type="chat", info=INFO)
    assert items[0].metadata.tags[-1] == "words:24"
    other = make_reader()
    with pytest.raises(PipelineError, match="'tag_length' requires 'word_count'"):
        other.pipeline.insert_before("embed", tag_length)


def test_a_user_step_runs_in_every_mode_that_can_run_it(llm_server: LLMTestServer) -> None:
    seen: list[str] = []
    spy = FunctionStep("spy", lambda state, runtime: seen.append(state.mode), requires=["items"])
    reader = make_reader(
        llm={"model": "m", "base_url": llm_server.url}, fine={"hallucination_filter": False}
    )
    llm_server.responder = lambda request: Reply(body=openai_completion('{"memory_list": []}'))
    reader.pipeline.insert_before("embed", spy)
    [fast] = reader.get_memory(CHAT, type="chat", info=INFO)
    reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    reader.fine_transfer_simple_mem(fast)
    assert seen == ["fast", "fine", "refine"]


class AddTag(Step):
    """A step class for YAML references: ``tests.pipeline.test_pipeline:AddTag``."""

    name = "add_tag"
    requires = ("items",)
    produces = ("items",)

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        for items in state.items:
            for item in items:
                item.metadata.tags.append(self.tag)


def write_config(tmp_path: Path, pipeline: str) -> Path:
    path = tmp_path / "reader.yaml"
    path.write_text(
        "backend: simple_struct\nconfig:\n  embedder: {backend: hash}\n  pipeline:\n" + pipeline,
        encoding="utf-8",
    )
    return path


def test_pipelines_declared_in_yaml(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "    insert_after:\n"
        "      parse: [{step: redact, config: {kinds: [email]}}]\n"
        "      window: [{step: min_length, config: {min_chars: 5}}]\n"
        "    insert_before:\n"
        "      embed: [{step: 'tests.pipeline.test_pipeline:AddTag', config: {tag: from-yaml}}]\n"
        "    replace:\n"
        "      filter: {step: 'tests.pipeline.test_pipeline:count_words'}\n"
        "    allow_imports: true\n"
        "  fine: {rewrite: 'off'}\n",  # a pass is turned off in fine, not by pipeline.remove
    )
    reader = MemReaderFactory.from_config(MemReaderConfigFactory.from_yaml(path))
    assert reader.pipeline.names == (
        "normalize",
        "parse",
        "redact",
        "window",
        "min_length",
        "fast_items",
        "prepare_fine",
        "refine_input",
        "extract",
        "count_words",
        "fine_items",
        "tool_schema",
        "importance",
        "dedup",
        "add_tag",
        "embed",
        "categorize",
    )
    [items] = reader.get_memory(CHAT, type="chat", info=INFO)
    assert "[email]" in items[0].memory and "4111" in items[0].memory, "only e-mails"
    assert items[0].metadata.tags[-1] == "from-yaml"


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("    remove: [nope]\n", "config pipeline: no step named 'nope'"),
        ("    insert_after: {parse: [{step: nosuchstep}]}\n", "unknown pipeline step 'nosuchstep'"),
        (
            "    insert_after: {parse: [{step: 'no_such_module_xyz:Step'}]}\n"
            "    allow_imports: true\n",
            "cannot import module 'no_such_module_xyz'",
        ),
        (
            "    insert_after: {parse: [{step: 'tests.pipeline.test_pipeline:Missing'}]}\n"
            "    allow_imports: true\n",
            "module 'tests.pipeline.test_pipeline' has no 'Missing'",
        ),
        (
            "    insert_after: {parse: [{step: redact, config: {kinds: [dna]}}]}\n",
            "unknown kinds ['dna']",
        ),
        ("    insert_after: {parse: [{stepp: redact}]}\n", "stepp"),
        (
            "    remove: [window]\n",
            "config pipeline: cannot remove step 'window': step 'fast_items' requires 'windows'",
        ),
        ("    remove: [rewrite]\n", "'rewrite' is a fine pass: turn it off in fine.passes"),
        ("    remove: [filter]\n", "'filter' is a fine pass: turn it off in fine.passes"),
    ],
)
def test_bad_yaml_pipelines_are_config_errors(tmp_path: Path, pipeline: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        MemReaderFactory.from_config(
            MemReaderConfigFactory.from_yaml(write_config(tmp_path, pipeline))
        )
    assert message in str(caught.value)


# -- interceptors ---------------------------------------------------------------------------------


def test_interceptors_see_every_step_in_order_with_timings_and_counts() -> None:
    reader = make_reader()
    events: list[tuple[str, StepEvent]] = []
    reader.step_hooks.before_step.append(lambda e: events.append(("before", e)))
    reader.step_hooks.after_step.append(lambda e: events.append(("after", e)))
    reader.step_hooks.after_step.append(lambda e: 1 / 0)  # a broken interceptor is ignored
    report = ReadReport()
    reader.get_memory(CHAT, type="chat", info=INFO, report=report)
    active = [
        *("normalize", "parse", "window", "fast_items", "importance", "dedup", "embed"),
        "categorize",
    ]
    assert [(kind, e.step) for kind, e in events] == [
        (kind, name) for name in active for kind in ("before", "after")
    ]
    after = {e.step: e for kind, e in events if kind == "after"}
    assert after["window"].counts == {"scenes": 1, "windows": 1, "items": 0}
    assert after["embed"].counts["items"] == 1 and after["embed"].mode == "fast"
    assert all(e.elapsed_s >= 0 for e in after.values())
    assert list(report.steps) == active and all(t >= 0 for t in report.steps.values())
    assert report.to_dict()["steps"] == report.steps


def test_on_step_error_sees_the_failure_and_the_error_propagates_typed() -> None:
    from memreader import InternalError

    reader = make_reader()
    failures: list[StepEvent] = []
    reader.step_hooks.on_step_error.append(failures.append)

    def explode(state: ReadState, runtime: ReaderRuntime) -> None:
        raise RuntimeError("no")

    reader.pipeline.insert_after("window", FunctionStep("explode", explode, requires=["windows"]))
    with pytest.raises(InternalError, match="step 'explode' failed: RuntimeError: no"):
        reader.get_memory(CHAT, type="chat", info=INFO)
    [event] = failures
    assert event.step == "explode" and isinstance(event.error, RuntimeError)


# -- the settings a step reads, and what the steps share -------------------------------------------


@pytest.mark.parametrize(
    ("name", "where", "kind"),
    [
        ("read_parts", "normalize", "PartsSettings"),
        ("strategy_window", "window", "StrategySettings"),
    ],
)
def test_a_step_in_a_reader_without_its_settings_says_which(
    name: str, where: str, kind: str
) -> None:
    reader = make_reader()
    if name == "read_parts":
        reader.pipeline.insert_after(where, build_step(StepSpec(step=name)))
        chat = [[{"role": "user", "content": [{"type": "image_url", "image_url": "x.png"}]}]]
    else:
        reader.pipeline.replace(where, build_step(StepSpec(step=name)))
        chat = CHAT
    with pytest.raises(ConfigError) as raised:
        reader.get_memory(chat, type="chat", info=INFO)
    message = str(raised.value)
    assert f"step {name!r} needs the settings of {kind}" in message
    assert "SimpleStructMemReaderConfig does not have" in message


def test_a_shared_part_is_built_once_per_reader_and_closed_with_it() -> None:
    closed: list[str] = []

    class Part:
        def close(self) -> None:
            closed.append("part")

    built: list[ReaderRuntime] = []

    def build(runtime: ReaderRuntime) -> Part:
        built.append(runtime)
        return Part()

    key = SharedKey("part", build)
    other = SharedKey("part", lambda runtime: Part())  # same name, another key: another part
    reader = make_reader()
    first = reader.runtime.shared(key)
    assert reader.runtime.shared(key) is first and built == [reader.runtime]
    assert reader.runtime.shared(other) is not first
    reader.close()
    assert closed == ["part", "part"]


def test_an_embedder_with_only_the_required_members_gets_the_abilities_defaults() -> None:
    class Bare:
        name = "bare:2"
        dimension = 2
        max_input_tokens = 512

        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        def count_tokens(self, text: str) -> int:
            return len(text.split())

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            self.calls.append(list(texts))
            return [[1.0, 0.0] for _ in texts]

    bare = Bare()
    full = with_defaults(bare)
    assert (full.batch_size, full.embeds_fragments, full.unreadable_share("tea")) == (
        64,
        False,
        None,
    )
    assert full.embed_fragments([("a", "b"), ("c",)]) == [[1.0, 0.0], [1.0, 0.0]]
    assert bare.calls == [["ab", "c"]], "parts are joined when the embedder has no embed_fragments"
    hashed = HashEmbedder()
    assert with_defaults(hashed) is hashed, "a built-in embedder has the abilities itself"
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(), embedder=bare)
    [items] = reader.get_memory(CHAT, type="chat", info=INFO)
    assert items and all(item.metadata.embedding == [1.0, 0.0] for item in items)


# -- factory isolation ----------------------------------------------------------------------------


def test_changing_a_factory_readers_pipeline_never_changes_another() -> None:
    cfg = MemReaderConfigFactory(config={"embedder": {"backend": "hash"}})
    first = MemReaderFactory.from_config(cfg)
    assert MemReaderFactory.from_config(cfg) is first
    first.pipeline.insert_after("parse", Redact())
    second = MemReaderFactory.from_config(cfg)
    assert second is not first, "a changed reader leaves the cache"
    assert "redact" in first.pipeline and "redact" not in second.pipeline
    assert MemReaderFactory.from_config(cfg) is second
    declared = MemReaderConfigFactory(
        config={
            "embedder": {"backend": "hash"},
            "pipeline": {"insert_after": {"parse": [{"step": "redact"}]}},
        }
    )
    assert declared.cache_key() != cfg.cache_key()
    assert "redact" in MemReaderFactory.from_config(declared).pipeline


# -- min_length -----------------------------------------------------------------------------------


def test_min_length_drops_short_windows_and_reports_each() -> None:
    reader = make_reader()
    reader.pipeline.insert_after("window", MinLength(min_chars=12))
    scenes = [
        [{"role": "user", "content": "ok"}],
        [{"role": "user", "content": "I sail every weekend in summer."}],
        [{"role": "assistant", "content": "Thanks!"}],
    ]
    report = ReadReport()
    result = reader.get_memory(scenes, type="chat", info=INFO, report=report)
    assert [len(items) for items in result] == [0, 1, 0]
    assert [w.status for w in report.windows] == ["dropped", "ok", "dropped"]
    assert report.windows[0].error == "min_length: 2 characters of text, fewer than 12"
    assert report.windows[2].error == "min_length: 7 characters of text, fewer than 12"


def test_min_length_in_fine_mode(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: Reply(body=openai_completion('{"memory_list": []}'))
    reader = make_reader(llm={"model": "m", "base_url": llm_server.url})
    reader.pipeline.insert_after("window", MinLength(min_chars=12))
    report = ReadReport()
    result = asyncio.run(
        reader.aget_memory(
            [
                [{"role": "user", "content": "ok"}],
                [{"role": "user", "content": "I sail a lot, really."}],
            ],
            type="chat",
            info=INFO,
            mode="fine",
            report=report,
        )
    )
    assert [len(items) for items in result] == [0, 1]
    assert [w.status for w in report.windows] == ["dropped", "fallback"]
    assert len(llm_server.requests) == 1, "no LLM call for a dropped window"


# -- redact -------------------------------------------------------------------------------------


def original_text(scenes: list[list[dict[str, Any]]], source: Any) -> str:
    content = scenes[source.scene_index][source.message_index]["content"]
    return content if source.part_index is None else content[source.part_index]["text"]


def check_redacted(
    scenes: list[list[dict[str, Any]]], items: list[Any], secrets: list[str], embedded: list[str]
) -> None:
    for item in items:
        texts = [item.memory, item.metadata.key or "", item.metadata.background]
        texts += [s.content for s in item.metadata.sources]
        texts += embedded
        for secret in secrets:
            assert not any(secret in text for text in texts), secret
        for source in item.metadata.sources:
            if source.span is None:
                continue
            start, end = source.span
            original = original_text(scenes, source)
            if source.transformed_by:
                assert source.transformed_by == ["redact"]
                assert redact_text(original)[start:end] == source.content
            else:
                assert original[start:end] == source.content


local_parts = st.from_regex(r"[a-z0-9][a-z0-9._+-]{0,15}", fullmatch=True)
phones = st.one_of(
    st.from_regex(r"\+[1-9]\d \(\d{3}\) \d{3}-\d{4}", fullmatch=True),
    st.from_regex(r"\d{3}-\d{3}-\d{4}", fullmatch=True),
    st.from_regex(r"\d{3}\.\d{3}\.\d{4}", fullmatch=True),
    st.from_regex(r"0\d{2} \d{4} \d{4}", fullmatch=True),
    st.from_regex(r"\+[1-9]\d{10,12}", fullmatch=True),
)
cards = st.from_regex(r"\d{4}([ -]?)\d{4}\1\d{4}\1\d{4}", fullmatch=True)
words = st.text(st.characters(whitelist_categories=["Ll", "Lu"]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    emails=st.lists(st.emails(), min_size=1, max_size=3),
    numbers=st.lists(st.one_of(phones, cards), min_size=1, max_size=3),
    filler=st.lists(words, min_size=1, max_size=40),
    max_tokens=st.sampled_from([64, 128, 1024]),
)
def test_redact_leaves_no_value_anywhere_and_spans_hold(
    emails: list[str], numbers: list[str], filler: list[str], max_tokens: int
) -> None:
    secrets = [*emails, *numbers]
    texts = []
    for i, secret in enumerate(secrets):
        texts.append(" ".join(filler[: 1 + i * 3]) + f" {secret}, " + " ".join(filler[i:]))
    scenes = [
        [{"role": "user", "content": text} for text in texts]
        + [{"role": "assistant", "content": "Noted: " + " ".join(filler)}]
    ]
    reader = make_reader(window={"max_tokens": max_tokens, "overlap_tokens": 16})
    reader.pipeline.insert_after("parse", Redact())
    result = reader.get_memory(scenes, type="chat", info=INFO)
    embedded = [t for call in reader.embedder.inner.calls for t in call]
    items = [item for items in result for item in items]
    check_redacted(scenes, items, secrets, embedded)
    # The filler has no digits and no "@": any left in what was indexed is a leaked fragment.
    indexed = embedded + [s.content for i in items for s in i.metadata.sources]
    assert not any(re.search(r"[\d@]", text) for text in indexed)
    assert {s.message_index for i in items for s in i.metadata.sources} == set(
        range(len(scenes[0]))
    ), "every message is still in some source"


def test_redact_in_fine_mode_keeps_values_out_of_prompts_and_items(
    llm_server: LLMTestServer,
) -> None:
    def echo(request: RecordedRequest) -> Reply:
        prompt = request.messages[-1]["content"]
        memory = {"key": prompt[:40], "memory_type": "UserMemory", "value": prompt, "tags": []}
        return Reply(
            body=openai_completion(json.dumps({"memory_list": [memory], "summary": prompt}))
        )

    llm_server.responder = echo
    reader = make_reader(
        llm={"model": "m", "base_url": llm_server.url},
        fine={"hallucination_filter": False, "rewrite": "off"},
    )
    reader.pipeline.insert_after("parse", Redact())
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    secrets = ["ann.lee@example.org", "+1 (555) 123-4567", "4111 1111 1111 1111"]
    prompts = [m["content"] for r in llm_server.requests for m in r.messages]
    assert not any(s in p for s in secrets for p in prompts)
    embedded = [t for call in reader.embedder.inner.calls for t in call]
    check_redacted(CHAT, items, secrets, embedded)
    assert re.search(r"\[email\].*\[phone\].*\[card\]", items[0].memory, re.S)


def test_redact_marks_only_the_messages_it_changed() -> None:
    reader = make_reader()
    reader.pipeline.insert_after("parse", Redact())
    [[item]] = reader.get_memory(CHAT, type="chat", info=INFO)
    assert [s.transformed_by for s in item.metadata.sources] == [["redact"], [], ["redact"]]
    check_redacted(CHAT, [item], ["ann.lee@example.org", "555", "4111"], [])


def test_fast_mode_embeds_the_messages_and_a_later_change_of_memory_is_what_gets_embedded() -> None:
    scene = [
        {"role": "user", "content": "I like green tea.", "chat_time": "2026-05-03"},
        {"role": "assistant", "content": "Noted!", "chat_time": "2026-05-03"},
    ]
    reader = make_reader()
    [[item]] = reader.get_memory([scene], type="chat", info=INFO)
    inner = reader.embedder.inner  # type: ignore[attr-defined]
    # Fast mode embeds the messages without their "role: [time]: " prefixes (embed_prefixes);
    # then the categorize step embeds the category descriptions, once per reader.
    assert inner.calls == [["I like green tea.\nNoted!"], CATEGORY_DESCRIPTIONS]
    assert item.memory.startswith("user: [2026-05-03]: I like green tea.")

    def shout(state: ReadState, runtime: ReaderRuntime) -> None:
        for item, _ in state.emitted:
            item.memory = item.memory.upper()

    changed = make_reader()
    changed.pipeline.insert_before("embed", FunctionStep("shout", shout, requires=["emitted"]))
    [[loud]] = changed.get_memory([scene], type="chat", info=INFO)
    assert changed.embedder.inner.calls[0] == [loud.memory]  # type: ignore[attr-defined]
    assert loud.metadata.embedding == changed.embedder.embed([loud.memory])[0]


def test_min_length_keeps_document_provenance() -> None:
    """A window min_length keeps has the sources it had without the step: its chunk and the
    heading trail where it starts (the scene was rebuilt by position and lost them)."""
    document = "# Report\n\n" + "".join(
        f"## Part {n}\n\n" + f"Paragraph {n} says something worth keeping. " * 40 + "\n\n"
        for n in range(4)
    )

    def sources(reader: SimpleStructMemReader) -> list[tuple[Any, ...]]:
        items = reader.get_memory([document], type="doc", info=INFO)
        return [
            (s.chunk_index, s.chunk_count, s.heading, s.span)
            for scene in items
            for item in scene
            for s in item.metadata.sources
        ]

    plain = make_reader(window={"max_tokens": 200, "overlap_tokens": 0})
    filtered = make_reader(window={"max_tokens": 200, "overlap_tokens": 0})
    filtered.pipeline.insert_after("window", MinLength(min_chars=0))
    expected = sources(plain)
    assert len(expected) > 2 and any(heading for _, _, heading, _ in expected)
    assert all(count is not None for _, count, _, _ in expected)
    assert sources(filtered) == expected
