"""Whether what a search or a context block returns holds a question's evidence: the three
checks behind the metrics of :mod:`memreader.evaluation.run`.

- :func:`cites`: a hit (a whole memory, e.g. a window of ~15 messages) cites an evidence
  message when one of its sources has an evidence id (``source.message_id``), or, failing
  that, when a source's text holds an evidence message's whole text (whitespace collapsed);
- :func:`ranked_messages`: the distinct messages the hits' passages name, best passage score
  first, across all hits (each message once, at its best score; ties keep the order they came
  in: hit rank, then passage order). A passage names the message of its
  ``source_index``; a hit without passages names none;
- :func:`holds`: a context block (XML entities unescaped, whitespace collapsed) holds an
  evidence message's whole text as a substring. Nothing else of the block's format counts.

>>> holds("<memories>\\nAna: I moved to Porto &amp; Braga.\\n</memories>",
...       ["I moved to Porto & Braga."])
True
>>> first_rank([False, True, True]), first_rank([])
(2, None)
"""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from memreader.evaluation.data import normalise_text

__all__ = ["MessageKey", "cites", "first_rank", "holds", "matches", "ranked_messages"]

#: How :func:`ranked_messages` names a message: its id, or ``("text", content)`` for a source
#: that carries no id.
MessageKey = str | tuple[str, str]


def matches(
    message_id: str | None, content: str, evidence: Collection[str], texts: Sequence[str]
) -> bool:
    """Whether a source (its ``message_id`` and ``content``) is an evidence message: by id, or
    failing that by holding an evidence text (``texts``: whitespace collapsed) whole."""
    if message_id is not None and message_id in evidence:
        return True
    content = normalise_text(content)
    return bool(content) and any(text and text in content for text in texts)


def cites(hit: Any, evidence: Collection[str], texts: Sequence[str]) -> bool:
    """Whether a search hit's sources cite an evidence message (see :func:`matches`)."""
    return any(
        matches(source.message_id, source.content, evidence, texts)
        for source in hit.memory.item.metadata.sources
    )


def ranked_messages(hits: Iterable[Any]) -> list[tuple[MessageKey, Any]]:
    """The messages the hits' passages name, best passage score first (see the module): each
    as its key and the source it is."""
    best: dict[MessageKey, tuple[float, int, Any]] = {}
    order = 0
    for hit in hits:
        sources = hit.memory.item.metadata.sources
        for passage in hit.passages:
            index = passage.source_index
            if index is None or not 0 <= index < len(sources):
                continue
            source = sources[index]
            key: MessageKey = source.message_id or ("text", normalise_text(source.content))
            if key not in best or passage.score > best[key][0]:
                best[key] = (passage.score, best[key][1] if key in best else order, source)
            order += 1
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    return [(key, source) for key, (_, _, source) in ranked]


def first_rank(found: Iterable[bool]) -> int | None:
    """The 1-based rank of the first true of ``found``; ``None`` when none is."""
    return next((rank for rank, hit in enumerate(found, 1) if hit), None)


def holds(block: str, texts: Sequence[str]) -> bool:
    """Whether the context ``block`` holds one of the evidence ``texts`` whole (see the
    module); ``texts`` are whitespace-collapsed already."""
    flat = normalise_text(html.unescape(block))
    return any(text and text in flat for text in texts)
