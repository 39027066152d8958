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

__all__ = ["ALL_MODES", "LLM_MODES", "READ_MODES", "SCENE_MODES", "Mode", "ReadMode"]

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
