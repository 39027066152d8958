"""A reader's pipeline: a step from YAML (redact), and a step of your own in Python.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python examples/pipeline_steps.py``
"""

from __future__ import annotations

from pathlib import Path

from memreader import MemReaderConfigFactory, MemReaderFactory, ReadReport
from memreader.pipeline import step
from memreader.steps.pii import redact_text

SCENES = [
    [
        {
            "role": "user",
            "content": "I'm Emily; write to emily.r@example.com or call 555-123-4567.",
        },
        {"role": "assistant", "content": "Thanks Emily, I'll email you the piano teachers' list."},
    ],
    [{"role": "user", "content": "ok"}],
]


@step("tag_team", requires=["items"], produces=["items"])
def tag_team(state, runtime):  # type: ignore[no-untyped-def]
    """A user step: tag every item with the team that ingested it."""
    for items in state.items:
        for item in items:
            item.metadata.tags.append("team:music")


def main() -> None:
    config = MemReaderConfigFactory.from_yaml(
        Path(__file__).parents[1] / "configs" / "simple_redacted.yaml"
    )
    reader = MemReaderFactory.from_config(config)
    reader.pipeline.insert_before("embed", tag_team)  # this reader now leaves the factory cache
    print(reader.pipeline)
    report = ReadReport()
    result = reader.get_memory(
        SCENES, type="chat", info={"user_id": "emily", "session_id": "s1"}, report=report
    )
    for scene_index, items in enumerate(result):
        for item in items:
            print(item.memory.replace("\n", " | "), item.metadata.tags)
            for source in item.metadata.sources:
                original = SCENES[scene_index][source.message_index]["content"]
                text = redact_text(original) if source.transformed_by else original
                assert source.span is not None
                assert text[source.span[0] : source.span[1]] == source.content
    print([(w.scene_index, w.status, w.error) for w in report.windows])


if __name__ == "__main__":
    main()
