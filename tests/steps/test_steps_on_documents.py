"""Every built-in step, in place, on a two-heading Markdown document: every item's sources keep
their chunk_index, chunk_count and heading trail.

The step names come from the registry (:data:`memreader.steps.registry.STEPS`), so a step
registered later is checked too, or fails here until it gets a run or a reason (a step that
rebuilt a scene by position once erased the document's provenance: issue 28). A step is "in
place" in one of these runs: a reader's default pipeline (every reader in ``READERS``, fast and
fine mode with every fine pass on, a refinement of the document's fast items), or the simple
reader's pipeline with the step inserted where its inputs are ready (:data:`INSERTED`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memreader import TextualMemoryItem
from memreader.extraction.passes import PASSES
from memreader.modes import ReadMode
from memreader.pipeline import Pipeline, Step
from memreader.readers import READERS, BaseMemReader
from memreader.steps.registry import STEPS
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.common import HASH_EMBEDDER, INFO

DOCUMENT = "# Report\n\n" + "".join(
    f"## Part {n}\n\n" + f"Paragraph {n} says something worth keeping. " * 40 + "\n\n"
    for n in range(2)
)
#: The heading trails a chunk of DOCUMENT can start under.
TRAILS = {"Report", "Report > Part 0", "Report > Part 1"}
WINDOW = {"max_tokens": 200, "overlap_tokens": 0}

#: Steps no reader runs by default: where the simple reader's pipeline takes them (after the
#: step that makes what they read), and how they are built.
INSERTED: dict[str, tuple[str, dict[str, Any]]] = {
    "redact": ("parse", {}),
    "min_length": ("window", {"min_chars": 0}),
}

#: Registered names that never act on a document's read, each with its reason. None today:
#: the steps with nothing to do on a document (describe_images and image_items without an
#: image, tool, skill and tool_schema without a tool call) still run in place and are checked.
NOT_ON_DOCUMENTS: dict[str, str] = {}

Provenance = tuple[Any, Any, Any]


def answer(request: ScriptedRequest) -> Any:
    """Each LLM pass's answer, citing the window's first line (a document window's chunk)."""
    if request.schema_name == "memory_extraction":
        memory = {"key": "part", "memory_type": "UserMemory", "value": "The report has parts."}
        return {"memory_list": [{**memory, "source_ids": [1]}], "summary": "a report"}
    if request.schema_name == "memory_filter":
        return {"results": [{"id": 1, "supported": True}]}
    if request.schema_name == "preferences":
        preference = {"preference": "The user keeps reports.", "kind": "explicit"}
        return {"preferences": [{**preference, "topic": "reports", "source_ids": [1]}]}
    return {"results": [], "trajectories": [], "skills": []}


#: A run: (reader name, mode); fine and refine modes run every fine pass.
Run = tuple[str, str]
RUNS: list[Run] = [
    (reader, mode) for reader in sorted(READERS.names()) for mode in ("fast", "fine", "refine")
]


def make_reader(reader: str, mode: str, store: Path) -> BaseMemReader:
    """``reader`` with the hash embedder, a scripted LLM and, in fine mode, every fine pass."""
    config: dict[str, Any] = {"embedder": HASH_EMBEDDER, "window": WINDOW}
    if mode != "fast":
        config["llm"] = ScriptedLLM(answer).config()
        config["fine"] = {"passes": sorted(PASSES.names())}
        config["store"] = f"sqlite:///{store}"  # reconcile reads the reader's store
    return build(reader, config)


def build(reader: str, config: dict[str, Any]) -> BaseMemReader:
    """The reader registered as ``reader``, built from ``config``."""
    cls = READERS.get(reader)
    return cls(cls.config_class(**config))


def provenance(items: Sequence[Sequence[TextualMemoryItem]]) -> list[Provenance]:
    """Every source of every item: its chunk, the document's chunk count, its heading trail."""
    return [
        (s.chunk_index, s.chunk_count, s.heading)
        for scene in items
        for item in scene
        for s in item.metadata.sources
    ]


def read(reader: BaseMemReader, mode: str) -> list[Provenance]:
    """The document read in ``mode`` (refine: its fast items refined)."""
    if mode == "refine":
        fast = reader.get_memory([DOCUMENT], type="doc", info=INFO)
        return provenance(reader.fine_transfer_simple_mem([i for s in fast for i in s]))
    read_mode: ReadMode = "fine" if mode == "fine" else "fast"
    return provenance(reader.get_memory([DOCUMENT], type="doc", info=INFO, mode=read_mode))


@functools.cache
def baseline() -> list[Provenance]:
    """The simple reader's fast read without any inserted step."""
    return read(build("simple_struct", _fast_config()), "fast")


def _fast_config() -> dict[str, Any]:
    return {"embedder": HASH_EMBEDDER, "window": WINDOW}


def holds(pipeline: Pipeline, name: str, mode: str) -> bool:
    """Whether ``pipeline`` runs the step registered as ``name`` in ``mode`` (a step may run
    under another name: the multimodal reader's ``normalize_parts`` is its ``normalize``)."""
    factory = STEPS.get(name)
    for step in pipeline.steps:
        if step.modes is not None and mode not in step.modes:
            continue
        if isinstance(factory, type) and isinstance(step, factory):
            return True
        if step.name == name:
            return True
    return False


def runs_of(name: str, tmp_path: Path) -> list[tuple[Run, BaseMemReader]]:
    """The default runs whose pipeline runs step ``name``."""
    found = []
    for reader_name, mode in RUNS:
        reader = make_reader(reader_name, mode, tmp_path / f"{reader_name}-{mode}.db")
        if holds(reader.pipeline, name, mode):
            found.append(((reader_name, mode), reader))
    return found


def check(found: list[Provenance], run: object) -> None:
    """Every source of a document item names its chunk, the chunk count and a heading trail."""
    assert found, f"{run}: no item has a source"
    counts = {count for _, count, _ in found}
    assert len(counts) == 1 and None not in counts, f"{run}: chunk counts {counts}"
    for index, count, heading in found:
        assert isinstance(index, int) and 0 <= index < count, f"{run}: chunk {index} of {count}"
        assert heading in TRAILS, f"{run}: heading {heading!r}"


def test_the_baseline_has_both_headings_and_every_chunk() -> None:
    found = baseline()
    check(found, "baseline")
    assert {heading for *_, heading in found} == TRAILS
    assert sorted(index for index, _, _ in found) == list(range(found[0][1]))


#: The built-in steps: what memreader registers (a test module may register steps of its own).
BUILT_IN = sorted(n for n in STEPS.names() if STEPS.get(n).__module__.startswith("memreader."))


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_step_keeps_a_documents_provenance(name: str, tmp_path: Path) -> None:
    if name in NOT_ON_DOCUMENTS:
        pytest.skip(NOT_ON_DOCUMENTS[name])
    if name in INSERTED:
        after, config = INSERTED[name]
        reader = build("simple_struct", _fast_config())
        step = STEPS.get(name)(**config)
        assert isinstance(step, Step)
        reader.pipeline.insert_after(after, step)
        assert read(reader, "fast") == baseline(), f"{name} changed the sources"
        return
    found = runs_of(name, tmp_path)
    assert found, (
        f"step {name!r} runs in no reader's default pipeline: add it to INSERTED (where it "
        "goes) or to NOT_ON_DOCUMENTS (why it does not apply to a document)"
    )
    for run, reader in found:
        sources = read(reader, run[1])
        check(sources, (name, *run))
        # The same windows: each source is one of the chunks the plain read cites, as it is.
        assert set(sources) <= set(baseline()), f"{(name, *run)}: {sources}"
        if run[1] == "fast":
            assert sources == baseline()
