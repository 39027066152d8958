"""Cold start (the MemU design): when ``context()`` finds nothing for a user, the block can be
the operator's templates instead of empty, e.g. what to ask a user the application knows
nothing about yet. Off by default (no templates).

The templates come from the reader config (``cold_start: {templates: [...]}``), never from
content; ``{user_id}`` in a template is replaced by the owner asked about (escaped as memory
text is: an id cannot close the block), and nothing else is expanded. They are marked as the
application's guidance, not as recalled data, and they keep to the call's budget: templates
that do not fit are left out, last first.

>>> from memreader.windowing.tokens import get_tokenizer
>>> settings = ColdStartConfig(templates=["New user {user_id}: ask what they like to be called."])
>>> block = cold_start_context(settings, "ana", get_tokenizer(), 200, searched=0)
>>> print(block.text)
<memories cold_start="true" note="nothing recalled yet: guidance from the application">
New user ana: ask what they like to be called.
</memories>
>>> block.cold_start, block.parts
(True, ())
"""

from __future__ import annotations

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.stores.context.parts import Context
from memreader.stores.context.text import escape_text
from memreader.windowing.tokens import Tokenizer

__all__ = ["ColdStartConfig", "cold_start_context", "or_cold_start"]

#: The most characters of one template, and the most templates: guidance, not a document.
MAX_TEMPLATE_CHARS = 4000
MAX_TEMPLATES = 20
_OPEN = '<memories cold_start="true" note="nothing recalled yet: guidance from the application">'
_CLOSE = "</memories>"


class ColdStartConfig(ConfigModel):
    """What ``context()`` returns when nothing matches.

    - ``templates`` (default none: off): texts shown, in order, as one block marked
      ``cold_start="true"``; ``{user_id}`` is replaced by the owner. At most
      :data:`MAX_TEMPLATES`, each at most :data:`MAX_TEMPLATE_CHARS` characters.
    """

    templates: list[str] = Field(default_factory=list, max_length=MAX_TEMPLATES)

    @field_validator("templates")
    @classmethod
    def _bounded(cls, templates: list[str]) -> list[str]:
        for index, template in enumerate(templates):
            if not template.strip():
                raise ValueError(f"template {index} is empty")
            if len(template) > MAX_TEMPLATE_CHARS:
                raise ValueError(
                    f"template {index} has {len(template)} characters "
                    f"(at most {MAX_TEMPLATE_CHARS})"
                )
        return templates


def cold_start_context(
    settings: ColdStartConfig, user_id: str, tokenizer: Tokenizer, max_tokens: int, searched: int
) -> Context | None:
    """The cold-start block for ``user_id`` within ``max_tokens``: the templates that fit, in
    order; ``None`` when there are none (off) or not even the first fits."""
    shown: list[str] = []
    for template in settings.templates:
        # The owner's id comes from the call: escaped as the block escapes memory text.
        trial = [*shown, template.replace("{user_id}", escape_text(user_id)).strip()]
        if tokenizer.count(_block(trial)) > max_tokens:
            break
        shown = trial
    if not shown:
        return None
    text = _block(shown)
    return Context(
        text=text,
        tokens=tokenizer.count(text),
        max_tokens=max_tokens,
        tokenizer=tokenizer.name,
        parts=(),
        searched=searched,
        cold_start=True,
    )


def _block(texts: list[str]) -> str:
    return "\n".join([_OPEN, "\n\n".join(texts), _CLOSE])


def or_cold_start(found: Context, settings: ColdStartConfig | None, user_id: str) -> Context:
    """``found``, or the cold-start block when it shows nothing and ``settings`` has
    templates that fit its budget."""
    if found.parts or settings is None or not settings.templates:
        return found
    from memreader.windowing.tokens import get_tokenizer

    tokenizer = get_tokenizer(found.tokenizer)
    block = cold_start_context(settings, user_id, tokenizer, found.max_tokens, found.searched)
    return block or found
