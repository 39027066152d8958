"""Prompts of the strategy reader's extraction and of the extra fine passes (tool trajectories,
preferences, skills), in English and Chinese.

Like the simple reader's prompts they number the window's messages (one physical line each, see
:func:`memreader.extraction.prompts.numbered_lines`) so every memory cites the messages it comes
from, and they ask for the same kind of JSON: a list of entries with ``source_ids``.
"""

from __future__ import annotations

from collections.abc import Sequence

from memreader.extraction.language import Language
from memreader.extraction.prompts import numbered_lines, one_line

__all__ = [
    "PREFERENCE_SYSTEM",
    "SKILL_SYSTEM",
    "STRATEGY_EXTRACT_SYSTEM",
    "TOOL_SYSTEM",
    "pass_messages",
]

STRATEGY_EXTRACT_SYSTEM: dict[Language, str] = {
    "en": (
        "You extract long-term memories from a conversation or document for a personal "
        "assistant, and you say whose each one is. Each memory is one self-contained fact, "
        "event, plan, opinion, preference or relationship, stated precisely: resolve pronouns to "
        "names; turn relative times into absolute dates using the messages' timestamps; keep "
        "numbers, names and places exact. Begin every value with whose statement or viewpoint it "
        "is, in brackets: [user viewpoint], [assistant viewpoint], or [<name> viewpoint] for a "
        "named person (a document's author: [document]); never mix two people's views in one "
        "memory. Put the names of the people it concerns in tags. Do not invent anything. Skip "
        "greetings and small talk. Each message is one line [n] (a line break inside it is "
        "written \\n).\n"
        'Answer with JSON: {"memory_list": [{"key": short title, "memory_type": '
        '"UserMemory" (about the user) or "LongTermMemory" (other facts), "value": the '
        'memory, "tags": [names and topic words], "source_ids": [numbers of the messages it '
        'comes from, those that give its names and dates too], "importance": 0-10 (how much '
        "it matters to remember later), "
        '"importance_reason": a few words, "valid_from": the date it began to hold, YYYY-MM-DD '
        "(or a date and time), resolved from the messages' timestamps, left out when unknown}], "
        '"summary": one paragraph on the whole input}.\n'
        "Write keys, values, tags and summary in the language of the input."
    ),
    "zh": (
        "你为个人助理从对话或文档中提取长期记忆，并标明每条记忆属于谁。每条记忆是一个独立的事实、事件、"
        "计划、观点、偏好或关系，表述要精确：把代词换成名字；根据消息时间戳把相对时间换成绝对日期；数字、"
        "人名、地点保持准确。每条内容开头用方括号写明是谁的陈述或观点：[用户观点]、[助手观点]，或具名的人"
        "用 [<名字>观点]（文档作者用 [文档]）；一条记忆不要混合两个人的观点。把相关人名放进标签。"
        "不要编造，跳过寒暄。每条消息是一行 [n]（消息内的换行写作 \\n）。\n"
        '用 JSON 回答：{"memory_list": [{"key": 简短标题, "memory_type": "UserMemory"（关于用户）'
        '或 "LongTermMemory"（其他事实）, "value": 记忆内容, "tags": [人名和主题词], '
        '"source_ids": [出处消息的编号，包括给出其中名字和日期的消息], '
        '"importance": 0-10（以后值得记起的程度）, '
        '"importance_reason": 简短理由, "valid_from": 根据消息时间戳得到的开始成立日期 '
        'YYYY-MM-DD（或日期和时间），不知道时省略}], "summary": 对整个输入的一段总结}。\n'
        "键、内容、标签和总结使用输入的语言。"
    ),
}

TOOL_SYSTEM: dict[Language, str] = {
    "en": (
        "You read an agent's conversation with its tool calls and their results, and record "
        "each attempt to use a tool: the task it served, the tool, the arguments it was called "
        "with, whether it worked (success, failure, or unknown when no result is shown), what "
        "came back, and the lesson for next time (what to repeat or avoid). Only tools that were "
        "really called count; a tool merely mentioned is not an attempt. Each message is one "
        "line [n].\n"
        'Answer with JSON: {"trajectories": [{"task": short, "tool": tool name, "arguments": '
        'the arguments as given, "outcome": "success" or "failure" or "unknown", "result": '
        'short, "lesson": one sentence, "source_ids": [numbers of the call and result '
        "messages]}]}.\nWrite in the language of the conversation."
    ),
    "zh": (
        "你阅读一段智能体与工具调用及其结果的对话，记录每一次工具使用：服务的任务、工具、调用参数、是否成功"
        "（success、failure，没有结果时为 unknown）、返回了什么，"
        "以及下次的经验（该重复或避免什么）。只记录"
        "真正调用过的工具，仅被提到的工具不算。每条消息是一行 [n]。\n"
        '用 JSON 回答：{"trajectories": [{"task": 简短任务, "tool": 工具名, "arguments": 调用参数, '
        '"outcome": "success" 或 "failure" 或 "unknown", "result": 简短结果, "lesson": 一句经验, '
        '"source_ids": [调用和结果消息的编号]}]}。\n使用对话的语言。'
    ),
}

PREFERENCE_SYSTEM: dict[Language, str] = {
    "en": (
        "You find the user's preferences in a conversation: explicit ones the user states (\"I "
        'prefer aisle seats") and implicit ones shown by a choice the user makes repeatedly. A '
        "preference is about the user, not the assistant; do not infer one from a single "
        "choice. Each message is one line [n].\n"
        'Answer with JSON: {"preferences": [{"preference": one sentence about the user, '
        '"kind": "explicit" or "implicit", "topic": one or two words, "source_ids": [numbers of '
        "the messages that show it]}]}; an empty list when there is none.\n"
        "Write in the language of the conversation."
    ),
    "zh": (
        "你在对话中找出用户的偏好：用户明确说出的（“我喜欢靠过道的座位”），以及用户反复做出的选择所体现的"
        "隐含偏好。偏好是关于用户的，不是助手的；不要从一次选择推断偏好。每条消息是一行 [n]。\n"
        '用 JSON 回答：{"preferences": [{"preference": 关于用户的一句话, "kind": "explicit" 或 '
        '"implicit", "topic": 一两个词, "source_ids": [体现它的消息编号]}]}；没有时给空列表。\n'
        "使用对话的语言。"
    ),
}

SKILL_SYSTEM: dict[Language, str] = {
    "en": (
        "You turn an agent's successful tool use into a reusable skill: a procedure another agent "
        "could follow for the same kind of task. Give it a short name, a one-sentence "
        "description of when to use it, the steps in order (which tool, with which arguments, "
        "what to check), the inputs it needs, and the tools it uses. Use only what the "
        "conversation shows worked. Each message is one line [n]; the successful attempts are "
        "listed after them.\n"
        'Answer with JSON: {"skills": [{"name": short name, "description": one sentence, '
        '"steps": [...], "inputs": [...], "tools": [...], "source_ids": [numbers of the '
        "messages it comes from]}]}; an empty list when nothing is reusable.\n"
        "Write in the language of the conversation."
    ),
    "zh": (
        "你把智能体成功的工具使用整理成可复用的技能：另一个智能体处理同类任务时可以照做的步骤。给出简短"
        "名称、一句说明何时使用、按顺序的步骤（用哪个工具、什么参数、检查什么）、所需输入和用到的工具。"
        "只使用对话表明有效的做法。每条消息是一行 [n]，成功的尝试列在其后。\n"
        '用 JSON 回答：{"skills": [{"name": 简短名称, "description": 一句话, "steps": [...], '
        '"inputs": [...], "tools": [...], "source_ids": [出处消息编号]}]}；'
        "没有可复用的内容时给空列表。\n"
        "使用对话的语言。"
    ),
}

_ATTEMPTS_HEADING: dict[Language, str] = {"en": "Successful attempts:", "zh": "成功的尝试："}


def pass_messages(
    system: str,
    lines: Sequence[tuple[int, str]],
    language: Language,
    extra: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The messages of one pass call: the window's numbered lines, then (for the skill pass)
    the successful attempts, one per line."""
    body = numbered_lines(lines)
    if extra:
        attempts = "\n".join(f"- {one_line(line)}" for line in extra)
        body += f"\n\n{_ATTEMPTS_HEADING[language]}\n{attempts}"
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]
