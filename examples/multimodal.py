"""Multimodal input: a chat with an image, files and audio; a document by path; a document by
URL (served here on 127.0.0.1, which the fetcher refuses unless the config allows it).

Run: .venv/bin/python examples/multimodal.py
"""

from __future__ import annotations

import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from memreader import ReadReport
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig

HERE = Path(__file__).resolve().parent
INFO = {"user_id": "emily", "session_id": "lisbon"}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    reader = MultiModalStructMemReader(
        MultiModalStructMemReaderConfig(
            allow_local_paths=True,  # off by default: input may come from strangers
            allowed_roots=[str(HERE / "files")],  # and then only under these folders
            base_dir=str(HERE),  # relative paths in parts are relative to this folder
            fetch={"allow_hosts": ["127.0.0.1"]},  # private addresses are refused otherwise
        )
    )

    # 1. A chat: the image and the files sit in their windows where the user put them.
    chat = json.loads((HERE / "chat_multimodal.json").read_text())
    report = ReadReport()
    (items,) = reader.get_memory(chat, type="chat", info=INFO, report=report)
    print(f"chat: {len(items)} item(s), {len(items[0].metadata.embedding or [])}-dim vectors")
    for part in report.parts:
        where = f"{part.message_index}.{part.part_index}"
        print(f"  part {where} {part.type}: {part.status} ({part.detail})")

    # 2. A document by path: each source names its chunk and the headings above it.
    (doc,) = reader.get_memory([str(HERE / "files" / "trip_notes.md")], type="doc", info=INFO)
    source = doc[0].metadata.sources[-1]
    print(
        f"doc: chunk {source.chunk_index + 1} of {source.chunk_count}, heading {source.heading!r}"
    )

    # 3. A document by URL.
    handler = functools.partial(_Quiet, directory=str(HERE / "files"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/prices.csv"
        (web,) = reader.get_memory([url], type="doc", info=INFO)
        print(f"url: {web[0].metadata.sources[0].doc_path} -> {web[0].memory.splitlines()[2]}")
    finally:
        server.shutdown()
        server.server_close()
    reader.close()


if __name__ == "__main__":
    main()
