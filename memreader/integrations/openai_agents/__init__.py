"""memreader for the OpenAI Agents SDK (``pip install '.[openai-agents]'``): a session
whose items are kept and read into one user's memories, and tools to remember, recall and build
a context from them.

- :class:`~memreader.integrations.openai_agents.session.MemreaderSession`: the SDK's
  ``SessionABC`` (``get_items``, ``add_items``, ``pop_item``, ``clear_session``);
- :func:`~memreader.integrations.openai_agents.tools.memory_tools`: ``remember``, ``recall``
  and ``memory_context`` as ``function_tool``\\ s bound to one user;
- :mod:`~memreader.integrations.openai_agents.items`: which items are read, and the message id
  each read item's memories name;
- :mod:`~memreader.integrations.openai_agents.kept`: where the items are kept (the SDK's
  ``SQLiteSession``, beside the store);
- :class:`~memreader.integrations.openai_agents.binding.AgentsMemoryError`: bad input, the
  SDK's ``UserError`` and memreader's ``InputError`` at once.
"""

from memreader.integrations.openai_agents.binding import AgentsMemoryError
from memreader.integrations.openai_agents.session import (
    MemreaderSession,
    ReadOutcome,
    UnreadItem,
)
from memreader.integrations.openai_agents.tools import memory_tools, tool_error_message

__all__ = [
    "AgentsMemoryError",
    "MemreaderSession",
    "ReadOutcome",
    "UnreadItem",
    "memory_tools",
    "tool_error_message",
]
