"""MemOS-shaped fixtures, written from the field names of MemOS's config models
(``src/memos/configs/{mem_reader,llm,embedder,chunker}.py``) and its item model: a reader config
whose LLM slots point at a test server, and MemOS items as MemOS's readers make them."""

from __future__ import annotations

from typing import Any

INFO = {"user_id": "u1", "session_id": "s1"}


def memos_llm(url: str, model: str = "test-model", **extra: Any) -> dict[str, Any]:
    """MemOS's ``LLMConfigFactory`` for an OpenAI-compatible server at ``url``."""
    config = {
        "model_name_or_path": model,
        "api_key": "sk-test-secret",
        "api_base": url,
        "temperature": 0.0,
        "max_tokens": 1024,
        "top_k": 50,
        "remove_think_prefix": True,
        **extra,
    }
    return {"backend": "openai", "config": config}


def memos_reader_config(url: str, **extra: Any) -> dict[str, Any]:
    """MemOS's ``MemReaderConfigFactory`` mapping: a simple_struct reader on ``url``. The
    embedder is memreader's ``hash`` test embedder (MemOS's own backends need a server or a
    model; their translation is tested on its own)."""
    config: dict[str, Any] = {
        "llm": memos_llm(url),
        "embedder": {"backend": "hash", "config": {}},
        "chunker": {
            "backend": "sentence",
            "config": {
                "tokenizer_or_token_counter": "gpt2",
                "chunk_size": 256,
                "chunk_overlap": 32,
                "min_sentences_per_chunk": 1,
            },
        },
        "remove_prompt_example": True,
        **extra,
    }
    return {"backend": "simple_struct", "config": config}


def memos_fast_item(item_id: str = "3f2b8c1e-5d4a-4f6b-9c7e-1a2b3c4d5e6f") -> dict[str, Any]:
    """A MemOS fast item's dict, as MemOS's ``to_dict()`` gives it: sources with ``index``,
    naive times, MemOS's lifecycle fields."""
    return {
        "id": item_id,
        "memory": "user: [2026-05-10T09:00:00]: I'm Emily. I moved to Lisbon last week.",
        "metadata": {
            "user_id": "u1",
            "session_id": "s1",
            "status": "activated",
            "is_fast": True,
            "evolve_to": [],
            "version": 3,
            "history": [
                {
                    "version": 2,
                    "memory": "Emily lives in Porto.",
                    "update_type": "conflict",
                    "created_at": "2026-05-01T10:00:00",
                }
            ],
            "working_binding": "wm-7",
            "type": "fact",
            "key": "I'm Emily",
            "confidence": 0.99,
            "tags": ["mode:fast"],
            "visibility": "private",
            "updated_at": "2026-05-11T08:00:00",
            "info": {"channel": "web"},
            "internal_info": {"rank": 2},
            "covered_history": ["old-1"],
            "manager_user_id": "boss",
            "project_id": "p9",
            "memory_type": "UserMemory",
            "sources": [
                {
                    "type": "chat",
                    "role": "user",
                    "chat_time": "2026-05-10T09:00:00",
                    "content": "I'm Emily. I moved to Lisbon last week.",
                    "index": 4,
                    "file_info": {"name": "note.txt"},
                }
            ],
            "embedding": [0.1, 0.2],
            "created_at": "2026-05-10T09:00:00",
            "usage": ["2026-05-12 recall"],
            "background": "",
            "file_ids": [],
        },
    }
