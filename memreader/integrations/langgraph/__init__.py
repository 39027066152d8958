"""memreader in LangGraph and LangChain (``pip install 'memreader-ai[langgraph]'``):

- :class:`~memreader.integrations.langgraph.store.MemReaderStore`: a LangGraph ``BaseStore``
  whose items are memreader memories (for ``graph.compile(store=...)`` and LangMem);
- :class:`~memreader.integrations.langgraph.retriever.MemReaderRetriever`: a LangChain
  retriever over a user's memories, provenance in each ``Document``'s metadata;
- :func:`~memreader.integrations.langgraph.tools.memory_tools`: ``remember``, ``recall`` and
  ``context`` as LangChain tools bound to one user.
"""

from memreader.integrations.langgraph.records import MemReaderItem, MemReaderSearchItem
from memreader.integrations.langgraph.retriever import MemReaderRetriever
from memreader.integrations.langgraph.store import MemReaderStore
from memreader.integrations.langgraph.tools import memory_tools

__all__ = [
    "MemReaderItem",
    "MemReaderRetriever",
    "MemReaderSearchItem",
    "MemReaderStore",
    "memory_tools",
]
