"""Print a few items of a JSONL file written by ``memreader read``: memory, type, sources."""

from __future__ import annotations

import json
import sys


def main(path: str, limit: int = 3) -> None:
    with open(path, encoding="utf-8") as handle:
        items = [json.loads(line) for line in handle]
    print(f"{len(items)} items in {path}; the first {min(limit, len(items))}:\n")
    for item in items[:limit]:
        meta = item["metadata"]
        print(f"id {item['id']}  {meta['memory_type']}  tags={meta['tags']}")
        print("  " + item["memory"].replace("\n", "\n  "))
        for source in meta["sources"]:
            print(
                f"  <- scene {source['scene_index']} message {source['message_index']} "
                f"span {source['span']} ({source['role']}, {source['chat_time']})"
            )
        print(f"  embedding: {len(meta['embedding'] or [])} dims\n")


if __name__ == "__main__":
    main(sys.argv[1])
