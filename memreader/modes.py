"""The modes a reader runs in, named once.

``fast`` and ``fine`` read scenes (``get_memory(mode=...)``); ``refine`` reads stored items
(``fine_transfer_simple_mem``). A step declares the modes it runs in with these sets.

>>> READ_MODES
('fast', 'fine')
>>> sorted(LLM_MODES)
['fine', 'refine']
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "ALL_MODES",
    "FALLBACK_TAG_PREFIX",
    "FAST_TAG",
    "LLM_MODES",
    "READ_MODES",
    "SCENE_MODES",
    "Mode",
    "ReadMode",
    "is_verbatim",
]

#: Every mode a pipeline runs in.
Mode = Literal["fast", "fine", "refine"]
#: The modes ``get_memory`` takes (``refine`` is ``fine_transfer_simple_mem``'s).
ReadMode = Literal["fast", "fine"]

#: Every mode, in order.
ALL_MODES: tuple[Mode, ...] = get_args(Mode)
#: The modes of ``get_memory``, in order.
READ_MODES: tuple[ReadMode, ...] = get_args(ReadMode)
#: Steps that read scenes run in these.
SCENE_MODES: frozenset[Mode] = frozenset(READ_MODES)
#: Steps that ask an LLM run in these.
LLM_MODES: frozenset[Mode] = frozenset({"fine", "refine"})

#: The tag of fast mode's items: a window's text as read.
FAST_TAG = "mode:fast"
#: The prefix of the tag fine mode gives a window's fallback item (``fallback:timeout``): the
#: window's text as read, kept because the LLM's answer could not be used.
FALLBACK_TAG_PREFIX = "fallback:"


def is_verbatim(tags: list[str]) -> bool:
    """Whether an item with ``tags`` holds its messages' text as read (a fast-mode window or a
    fine-mode fallback) rather than a memory written from them.

    >>> is_verbatim(["mode:fast"]), is_verbatim(["mode:fine", "fallback:timeout"])
    (True, True)
    >>> is_verbatim(["mode:fine", "preference"])
    False
    """
    return FAST_TAG in tags or any(tag.startswith(FALLBACK_TAG_PREFIX) for tag in tags)
