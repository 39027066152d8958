"""Tool schemas: one ``ToolSchemaMemory`` per distinct tool schema in the input, no LLM.

===========  =======================  ==============  =====
step         requires                 produces        modes
===========  =======================  ==============  =====
tool_schema  windows, items, emitted  items, emitted  fine
===========  =======================  ==============  =====

A fine pass (:mod:`memreader.extraction.passes`) that asks no LLM, on by default.
"""

from __future__ import annotations

import hashlib
from typing import Any

from memreader.extraction import short_error
from memreader.extraction.importance import heuristic_importance
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem
from memreader.pipeline import Step
from memreader.scenes.clipping import render_json
from memreader.steps.chain import count_pass
from memreader.steps.items import make_item
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState
from memreader.windowing.parsers import PartRef

__all__ = ["ToolSchemas"]


@STEPS.register("tool_schema")
class ToolSchemas(Step):
    """One ``ToolSchemaMemory`` per distinct tool schema in the input (``tool_description``
    parts, and a message's ``tools`` definitions), deduplicated by the schema's content hash
    within a call; its id depends only on the owner and the schema, so it is the same in every
    call. No LLM."""

    name = "tool_schema"
    requires = ("windows", "items", "emitted")
    produces = ("items", "emitted")
    modes = frozenset({"fine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        seen: set[str] = set()
        made = 0
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                sources = None
                for segment_index, segment in enumerate(window.segments):
                    ref = ws.units[segment.unit].key
                    if not isinstance(ref, PartRef) or ref.part.type != "tool_description":
                        continue
                    payload = ref.part.payload if isinstance(ref.part.payload, dict) else {}
                    schema = _schema_of(payload)
                    digest = hashlib.sha256(schema.encode()).hexdigest()[:32]
                    if digest in seen:
                        continue
                    seen.add(digest)
                    sources = sources if sources is not None else ws.sources(window)
                    try:
                        item = _schema_item(state, payload, schema, digest, sources[segment_index])
                    except Exception as exc:  # one schema's failure is that schema's record
                        entry.pass_errors.append(f"tool_schema: {short_error(exc)}")
                        continue
                    state.items[position].append(item)
                    state.emitted.append((item, entry))
                    made += 1
        if made:
            count_pass(state, self.name, items=made)


def _schema_of(payload: dict[str, Any]) -> str:
    """The canonical JSON of a tool schema (what identifies it)."""
    body = {k: v for k, v in payload.items() if k != "type"}
    return render_json(body, limit=None, sort_keys=True).text  # json.dumps, depth-bounded


def _schema_item(
    state: ReadState, payload: dict[str, Any], schema: str, digest: str, source: SourceMessage
) -> TextualMemoryItem:
    name = str(payload.get("name") or "tool")
    description = payload.get("description")
    parameters = payload.get("parameters", payload.get("input_schema"))
    memory = f"Tool {name}"
    memory += f": {description}" if isinstance(description, str) and description else ""
    if parameters is not None:
        shown = render_json(parameters, sort_keys=True).text  # clipped, like the tool's line
        memory += f" Parameters: {shown}"
    return make_item(
        memory=memory,
        info=state.info,
        sources=[source],
        memory_type=MemoryType.TOOL_SCHEMA,
        tags=list(dict.fromkeys(["mode:fine", "tool_schema", f"tool:{name}", *state.custom_tags])),
        id_parts=("tool_schema", digest),
        key=name,
        importance=heuristic_importance(memory),
    )
