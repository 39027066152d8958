"""What an agent's tool call may send and what it is answered, in sizes: the arguments of the
tools (MCP's, and the framework adapters' in :mod:`memreader.integrations`) are checked against
them, and answers are bounded by construction (at most :data:`MAX_K` hits, each memory's text
and each quoted source clipped with a marker saying how much was cut, at most
:data:`MAX_LISTED` events, categories or history entries, a Markdown file at most
:data:`MAX_RESOURCE_CHARS`).

>>> clipped("tea" * 20, 40)
'teateatea… [clipped 51 of 60 characters]'
"""

from __future__ import annotations

from memreader.scenes.clipping import clip

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "MAX_K",
    "MAX_LISTED",
    "MAX_MEMORY_CHARS",
    "MAX_MESSAGES",
    "MAX_QUERY_CHARS",
    "MAX_QUOTE_CHARS",
    "MAX_RESOURCE_CHARS",
    "MAX_SOURCES",
    "MAX_TEXT_CHARS",
    "MAX_TOKENS",
    "clipped",
]

#: One text argument (a fact, a message, a new text), in characters.
MAX_TEXT_CHARS = 100_000
#: All the text of one ``remember`` call, in characters.
MAX_CONTENT_CHARS = 1_000_000
#: Messages in one ``remember`` call.
MAX_MESSAGES = 500
#: A query, in characters.
MAX_QUERY_CHARS = 2_000
#: An id, a session, a document path, a reason or a user id, in characters.
MAX_ID_CHARS = 1_000
#: Memories one ``recall`` returns.
MAX_K = 50
#: The token budget ``context`` may be given.
MAX_TOKENS = 32_000
#: A memory's text in an answer, in characters (longer: clipped with a marker).
MAX_MEMORY_CHARS = 4_000
#: A quoted source in an answer, in characters.
MAX_QUOTE_CHARS = 500
#: Sources shown per memory (``sources_total`` says how many it has).
MAX_SOURCES = 10
#: Events, history entries or categories in one answer (the total is given beside them).
MAX_LISTED = 200
#: A Markdown resource, in characters (a category of thousands of memories: clipped, marked).
MAX_RESOURCE_CHARS = 1_000_000


def clipped(text: str, limit: int = MAX_MEMORY_CHARS) -> str:
    """``text``, or its first characters and a marker counting what was cut."""
    return clip(text, limit).text
