"""memreader as a LangChain retriever: :class:`MemReaderRetriever`, a
``langchain_core.retrievers.BaseRetriever`` over ``Memory.search`` for one user, whose
``Document`` objects carry where each memory came from in their ``metadata`` (the memory as
memreader's MCP tools show it: ``id``, ``session_id``, ``score``, ``sources`` with each
source's message, speaker, time, span and quote).

>>> from memreader import Memory
>>> memory = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> _ = memory.add([{"role": "user", "content": "I adopted a cat named Miso."}],
...                user_id="ana", session_id="chat-1")
>>> docs = MemReaderRetriever(memory=memory, user_id="ana").invoke("cat")
>>> docs[0].page_content, docs[0].metadata["session_id"], docs[0].metadata["sources"][0]["role"]
('user: I adopted a cat named Miso.', 'chat-1', 'user')
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, field_validator

from memreader.answers.shapes import hit_json
from memreader.calls.deadlines import in_thread
from memreader.front.async_memory import AsyncMemory
from memreader.front.inputs import check_user
from memreader.front.memory import Memory
from memreader.stores.checks import MAX_K
from memreader.stores.filters import SearchFilters

__all__ = ["MemReaderRetriever", "hit_document"]


def hit_document(hit: Any) -> Document:
    """A search hit as a LangChain ``Document``: its text, and the rest in ``metadata``."""
    shown = hit_json(hit)
    return Document(page_content=hit.text, metadata=shown, id=hit.id)


class MemReaderRetriever(BaseRetriever):
    """The ``k`` best memories of ``user_id`` for a query, as ``Document`` objects (see the module
    docstring). ``filters``: ``Memory.search``'s (``session_id``, ``types``, ``since``,
    ``agent_id``, ``task_id``, ``min_score``...), fixed by whoever builds the retriever.

    Raises:
        pydantic.ValidationError: no ``memory``, a bad ``user_id``, ``k`` or filter.
    """

    memory: Any
    user_id: str
    k: int = Field(default=4, ge=1, le=MAX_K)
    filters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("memory")
    @classmethod
    def _a_memory(cls, memory: Any) -> Memory:
        if isinstance(memory, AsyncMemory):
            return memory.memory
        if not isinstance(memory, Memory):
            raise ValueError(f"memory must be a memreader Memory, got {type(memory).__name__}")
        return memory

    @field_validator("filters")
    @classmethod
    def _known_filters(cls, filters: dict[str, Any]) -> dict[str, Any]:
        SearchFilters.of(filters)  # an unknown name or bad value fails here, not at a search
        return filters

    @field_validator("user_id")
    @classmethod
    def _a_user(cls, user_id: str) -> str:
        return check_user(user_id, "MemReaderRetriever")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.memory.search(query, user_id=self.user_id, k=self.k, filters=self.filters)
        return [hit_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = await in_thread(
            lambda: self.memory.search(query, user_id=self.user_id, k=self.k, filters=self.filters)
        )
        return [hit_document(hit) for hit in hits]
