"""Fast mode from Python: read two chat scenes into embedded items with exact provenance.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python examples/quickstart.py``
"""

from __future__ import annotations

import json
from pathlib import Path

from memreader import MemReaderConfigFactory, MemReaderFactory


def main() -> None:
    scenes = json.loads((Path(__file__).parent / "chat.json").read_text(encoding="utf-8"))
    config = MemReaderConfigFactory.from_yaml(
        Path(__file__).parents[1] / "configs" / "simple_local.yaml"
    )
    reader = MemReaderFactory.from_config(config)
    result = reader.get_memory(
        scenes, type="chat", info={"user_id": "emily", "session_id": "s1"}, mode="fast"
    )
    for scene_index, items in enumerate(result):
        for item in items:
            source = item.metadata.sources[0]
            original = scenes[scene_index][source.message_index]["content"]
            assert source.span is not None
            assert original[source.span[0] : source.span[1]] == source.content  # exact provenance
            print(
                item.metadata.memory_type.value,
                len(item.metadata.embedding or []),
                item.memory[:60],
            )


if __name__ == "__main__":
    main()
