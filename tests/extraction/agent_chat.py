"""A chat with real tool calls and a scripted LLM's answers for every fine pass, shared by the
tests of the passes (tests/extraction) and of what they write (tests/categories)."""

from __future__ import annotations

import json
from typing import Any

from tests.llm_server import RecordedRequest, Reply, openai_completion

ALL_PASSES = ["extract", "filter", "rewrite", "tool", "preference", "skill", "tool_schema"]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}

# Window lines: [1] the system text, [2] its tool definition, [3] the user, [4] the tool call,
# [5] the tool's result, [6] the answer.
TOOL_CHAT = [
    {"role": "system", "content": "You are a travel assistant.", "tools": [WEATHER_TOOL]},
    {"role": "user", "content": "I always take the aisle seat. What's the weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": -3, "sky": "snow"}'},
    {"role": "assistant", "content": "It is -3°C and snowing in Oslo."},
]

MENTION_CHAT = [
    {"role": "user", "content": "I used a tool called get_weather yesterday; tools are great."},
    {"role": "assistant", "content": "Nice, which tool do you like most?"},
]


def schema_name(request: RecordedRequest) -> str:
    fmt = (request.json or {}).get("response_format") or {}
    return str(fmt.get("json_schema", {}).get("name", ""))


ANSWERS: dict[str, Any] = {
    "memory_extraction": {
        "memory_list": [
            {
                "key": "seat",
                "memory_type": "UserMemory",
                "value": "The user takes the aisle seat.",
                "tags": [],
                "source_ids": [3],
            }
        ],
        "summary": "weather in Oslo",
    },
    "tool_trajectories": {
        "trajectories": [
            {
                "task": "check the weather in Oslo",
                "tool": "get_weather",
                "arguments": '{"city": "Oslo"}',
                "outcome": "success",
                "result": "-3°C, snow",
                "lesson": "get_weather takes a city name",
                "source_ids": [4, 5],
            }
        ]
    },
    "preferences": {
        "preferences": [
            {
                "preference": "The user prefers aisle seats.",
                "kind": "explicit",
                "topic": "seats",
                "source_ids": [3],
            }
        ]
    },
    "skills": {
        "skills": [
            {
                "name": "../../Check city weather",
                "description": "Look up the weather of a city before a trip.",
                "steps": ["Call get_weather with the city", "Report temperature and sky"],
                "inputs": ["city"],
                "tools": ["get_weather"],
                "source_ids": [4, 5],
            }
        ]
    },
}


def responder(*, failing: frozenset[str] = frozenset()) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        name = schema_name(request)
        if name in failing:
            return Reply(status=500, body={"error": {"message": f"{name} is down"}})
        answer = ANSWERS.get(name, {"results": []})
        return Reply(body=openai_completion(json.dumps(answer, ensure_ascii=False)))

    return respond
