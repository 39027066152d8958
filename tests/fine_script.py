"""The fine-mode answers the LLM test server gives (``scripted_responder``: an extraction of
three memories of Emily's chat, a filter that drops the cat, a rewrite of the date) and a reader
on that server (``make_reader``): shared by the fine-mode tests of extraction, windows, readers
and the service."""

from __future__ import annotations

import json
from typing import Any

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from tests.common import HASH_EMBEDDER
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, ollama_chat, openai_completion

CHAT = [
    [
        {
            "role": "user",
            "content": "I'm Emily. I moved to Lisbon last week.",
            "chat_time": "2026-05-10T09:00:00",
        },
        {
            "role": "assistant",
            "content": "Welcome! How do you like it?",
            "chat_time": "2026-05-10T09:01:00",
        },
        {
            "role": "user",
            "content": "I love it. I start piano lessons tomorrow.",
            "chat_time": "2026-05-10T09:02:00",
        },
    ]
]


def kind(request: RecordedRequest) -> str:
    """Which pass a request is for, by its schema name (json_schema mode)."""
    body = request.json or {}
    fmt = body.get("response_format") or {}
    if "json_schema" in fmt:
        return str(fmt["json_schema"]["name"])
    schema = body.get("format")
    if isinstance(schema, dict):  # ollama: tell passes apart by the schema sent as `format`
        properties = schema["properties"]
        if "memory_list" in properties:
            return "memory_extraction"
        return (
            "memory_filter"
            if "supported" in properties["results"]["items"]["properties"]
            else "memory_rewrite"
        )
    return "unknown"


EXTRACTION = {
    "memory_list": [
        {
            "key": "Emily's city",
            "memory_type": "UserMemory",
            "value": "Emily moved to Lisbon in the week before 2026-05-10.",
            "tags": ["relocation"],
            "source_ids": [1],
        },
        {
            "key": "Emily's pet",
            "memory_type": "UserMemory",
            "value": "Emily has a cat named Tom.",
            "tags": ["pets"],
            "source_ids": [2],
        },
        {
            "key": "piano",
            "memory_type": "UserMemory",
            "value": "She starts piano lessons tomorrow.",
            "tags": ["music"],
            "source_ids": [3],
        },
    ],
    "summary": "Emily moved to Lisbon and starts piano lessons.",
}


def scripted_responder(*, extraction: Any = EXTRACTION, usage: tuple[int, int] = (100, 20)) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        which = kind(request)
        if which == "memory_extraction":
            content = extraction if isinstance(extraction, str) else json.dumps(extraction)
        elif which == "memory_filter":
            content = json.dumps(
                {
                    "results": [
                        {"id": 1, "supported": True},
                        {"id": 2, "supported": False, "reason": "no cat is mentioned"},
                    ]
                }
            )
        else:
            content = json.dumps(
                {"results": [{"id": 2, "value": "Emily starts piano lessons on 2026-05-11."}]}
            )
        if request.api == "ollama":
            return Reply(body=ollama_chat(content, prompt_eval_count=usage[0], eval_count=usage[1]))
        return Reply(body=openai_completion(content, usage=usage))

    return respond


def make_reader(server: LLMTestServer, **overrides: Any) -> SimpleStructMemReader:
    llm = {
        "backend": "openai",
        "model": "test-model",
        "base_url": server.url,
        "api_key": "sk-test-secret",
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "max_retries": 2,
        "timeout": 5,
    }
    llm.update(overrides.pop("llm", {}))
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER,
        window={"max_tokens": 256, "overlap_tokens": 32},
        llm=llm,
        **overrides,
    )
    return SimpleStructMemReader(config)
