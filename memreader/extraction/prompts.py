"""Prompts of fine mode, in English and Chinese.

Prompts are short on purpose: the input is the cost. The window's messages are numbered so the
model can cite them (``source_ids``) and time-stamped so it can turn "yesterday" into a date
from the conversation's own time, never from today's.
"""

from __future__ import annotations

from collections.abc import Sequence

from memreader.extraction.language import Language

EXTRACT_SYSTEM: dict[Language, str] = {
    "en": (
        "You extract long-term memories from a conversation or document for a personal "
        "assistant. Each memory is one self-contained fact, event, plan, preference or "
        "relationship worth remembering, stated precisely: resolve pronouns to names; turn "
        "relative times (yesterday, next week) into absolute dates using the timestamps of the "
        "messages; keep numbers, names and places exact. Do not invent anything the messages do "
        "not say. Skip greetings and small talk.\n"
        'Answer with JSON: {"memory_list": [{"key": short title, "memory_type": '
        '"UserMemory" (about the user) or "LongTermMemory" (other facts), "value": the '
        'memory, "tags": [a few topic words], "source_ids": [numbers of the messages it comes '
        'from]}], "summary": one paragraph on the whole input}.\n'
        "Write keys, values, tags and summary in the language of the input."
    ),
    "zh": (
        "你为个人助理从对话或文档中提取长期记忆。每条记忆是一个独立、值得记住的事实、事件、计划、"
        "偏好或关系，表述要精确：把代词换成名字；根据消息的时间戳把相对时间（昨天、下周）换成绝对日期；"
        "数字、人名、地点保持准确。不要编造消息中没有的内容，跳过寒暄。\n"
        '用 JSON 回答：{"memory_list": [{"key": 简短标题, "memory_type": "UserMemory"（关于用户）'
        '或 "LongTermMemory"（其他事实）, "value": 记忆内容, "tags": [几个主题词], '
        '"source_ids": [出处消息的编号]}], "summary": 对整个输入的一段总结}。\n'
        "键、内容、标签和总结使用输入的语言。"
    ),
}

CUSTOM_TAGS: dict[Language, str] = {
    "en": "Prefer these tags where they fit: {tags}.",
    "zh": "合适时优先使用这些标签：{tags}。",
}

FILTER_SYSTEM: dict[Language, str] = {
    "en": (
        "You check extracted memories against their source messages. A memory is supported when "
        "the messages state or directly imply it; it is unsupported when it adds facts, names, "
        "dates or numbers the messages do not give, or contradicts them. Answer with JSON: "
        '{"results": [{"id": memory number, "supported": true or false, "reason": short}]}.'
    ),
    "zh": (
        "你根据出处消息核对提取出的记忆。消息明确说出或直接蕴含的记忆为有依据；添加了消息没有的事实、"
        "名字、日期或数字，或与消息矛盾的记忆为无依据。用 JSON 回答："
        '{"results": [{"id": 记忆编号, "supported": true 或 false, "reason": 简短理由}]}。'
    ),
}

REWRITE_SYSTEM: dict[Language, str] = {
    "en": (
        "You make extracted memories precise using their source messages: replace pronouns and "
        "vague references with names, relative times with absolute dates from the message "
        "timestamps, and keep everything else as it is. Do not add facts. Answer with JSON: "
        '{"results": [{"id": memory number, "value": the rewritten memory}]}, listing only '
        "memories you changed. Keep the language of the memory."
    ),
    "zh": (
        "你根据出处消息把提取出的记忆改写得更精确：把代词和模糊指代换成名字，把相对时间换成根据消息"
        "时间戳得到的绝对日期，其余保持不变，不要添加事实。用 JSON 回答："
        '{"results": [{"id": 记忆编号, "value": 改写后的记忆}]}，'
        "只列出改动过的记忆。保持记忆的语言。"
    ),
}

USER_ONLY: dict[Language, str] = {
    "en": " Only the user's own messages count as evidence; the assistant's do not.",
    "zh": " 只有用户自己的消息算作依据，助理的消息不算。",
}


def numbered_lines(lines: Sequence[tuple[int, str]]) -> str:
    """``[n] line`` for each (number, line)."""
    return "\n".join(f"[{n}] {line}" for n, line in lines)


def extraction_messages(
    language: Language, lines: Sequence[tuple[int, str]], custom_tags: Sequence[str]
) -> list[dict[str, str]]:
    """The chat messages of one extraction call."""
    system = EXTRACT_SYSTEM[language]
    if custom_tags:
        system += "\n" + CUSTOM_TAGS[language].format(tags=", ".join(custom_tags))
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": numbered_lines(lines)},
    ]


def check_messages(
    system: str,
    lines: Sequence[tuple[int, str]],
    memories: Sequence[tuple[int, str]],
    language: Language,
) -> list[dict[str, str]]:
    """The chat messages of a filter or rewrite call: sources, then the numbered memories."""
    heading = ("Messages:", "Memories:") if language == "en" else ("消息：", "记忆：")
    body = f"{heading[0]}\n{numbered_lines(lines)}\n\n{heading[1]}\n{numbered_lines(memories)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]
