"""Fine mode's image pass: a vision model describes one image, with the conversation around it
as context, and extracts memories from it (the extraction contract, the image being source 1).

The request has the OpenAI vision shape (a user message whose content is a text part and an
``image_url`` part holding a ``data:`` URL); the Ollama client sends it as ``images``. A failure
is never a made-up caption: the plan returns the failure, and the reader keeps a fallback item
that says only what is known (where the image came from, its format and size).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memreader.extraction.contract import EXTRACTION_SCHEMA, ExtractedMemory, read_extraction
from memreader.extraction.fine import LLMRequest, fallback_reason, short_error
from memreader.extraction.language import Language
from memreader.llms import LLMError, LLMResponse

__all__ = ["IMAGE_SYSTEM", "ImageOutcome", "describe_image_plan", "image_messages"]

logger = logging.getLogger(__name__)

#: The conversation shown with an image is clipped to this many characters.
MAX_CONTEXT_CHARS = 2000

IMAGE_SYSTEM: dict[Language, str] = {
    "en": (
        "You read an image that someone shared, for a personal assistant's long-term memory. "
        "Describe what the image shows, precisely and only what is visible (text in it "
        "verbatim), in the summary; then extract memories: facts about the user or others that "
        "the image, read with the conversation around it, establishes. Do not guess names, "
        "places or dates the image and conversation do not give. The image is source 1.\n"
        'Answer with JSON: {"memory_list": [{"key": short title, "memory_type": "UserMemory" '
        'or "LongTermMemory", "value": the memory, "tags": [a few topic words], '
        '"source_ids": [1], "importance": 0-10 (how much it matters to remember later), '
        '"importance_reason": a few words, "valid_from": the date it began to hold, YYYY-MM-DD, '
        'left out when unknown}], "summary": the description of the image}.\n'
        "Write in the language of the conversation."
    ),
    "zh": (
        "你为个人助理的长期记忆阅读一张别人分享的图片。在 summary 中准确描述图片内容，只写看得见的"
        "（图中文字照录）；然后提取记忆：结合周围对话，图片所确立的关于用户或他人的事实。不要猜测图片和"
        "对话没有给出的人名、地点或日期。图片是出处 1。\n"
        '用 JSON 回答：{"memory_list": [{"key": 简短标题, "memory_type": "UserMemory" 或 '
        '"LongTermMemory", "value": 记忆内容, "tags": [几个主题词], "source_ids": [1], '
        '"importance": 0-10（以后值得记起的程度）, "importance_reason": 简短理由, '
        '"valid_from": 开始成立的日期 YYYY-MM-DD，不知道时省略}], '
        '"summary": 图片的描述}。\n'
        "使用对话的语言。"
    ),
}

_CONTEXT_INTRO: dict[Language, str] = {
    "en": "The conversation around the image ({label}):\n{context}",
    "zh": "图片（{label}）周围的对话：\n{context}",
}


@dataclass
class ImageOutcome:
    """What the vision model made of one image: a description and memories, or a failure
    (``fallback_reason`` and ``error``)."""

    description: str = ""
    memories: list[ExtractedMemory] = field(default_factory=list)
    fallback_reason: str | None = None
    error: str | None = None
    attempts: int = 0


def image_messages(
    data_url: str, label: str, context: str, language: Language
) -> list[dict[str, Any]]:
    """The vision request: the system prompt, then the context and the image in one user
    message (OpenAI's content-part shape)."""
    if len(context) > MAX_CONTEXT_CHARS:
        context = "..." + context[-(MAX_CONTEXT_CHARS - 3) :]
    text = _CONTEXT_INTRO[language].format(label=label, context=context or "-")
    return [
        {"role": "system", "content": IMAGE_SYSTEM[language]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
        },
    ]


def describe_image_plan(data_url: str, label: str, context: str, language: Language) -> Any:
    """The plan of one image's call (a generator for :func:`memreader.extraction.run_plan`);
    returns an :class:`ImageOutcome`, never raises for the model's failure."""
    try:
        response: LLMResponse = yield LLMRequest(
            "image_parser_llm",
            image_messages(data_url, label, context, language),
            EXTRACTION_SCHEMA,
            "image_memories",
            validate=partial(read_extraction, valid_ids=[1]),
        )
    except LLMError as exc:
        logger.warning("describing image %s failed: %s", label, short_error(exc))
        return ImageOutcome(fallback_reason=fallback_reason(exc), error=short_error(exc))
    extraction = response.validated
    if not extraction.summary and not extraction.memories:
        return ImageOutcome(
            fallback_reason="empty",
            error="the model gave neither a description nor a memory",
            attempts=response.attempts,
        )
    for memory in extraction.memories:
        memory.source_ids = [1]
    return ImageOutcome(
        description=extraction.summary, memories=extraction.memories, attempts=response.attempts
    )
