"""The front door: :class:`Memory` (and :class:`AsyncMemory`), one object that owns a reader,
its store and its category keeper.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> m.add([{"role": "user", "content": "I moved to Lisbon."}], user_id="emily").counts
{'ADD': 1}
>>> hits = m.search("Lisbon", user_id="emily")
>>> hits[0].memory.item.metadata.user_id
'emily'
>>> m.close()

See :mod:`memreader.front.memory` (configs, stores), :mod:`memreader.front.inputs` (what
``add`` accepts, the default session id) and :mod:`memreader.front.home` (where ``Memory()``
keeps its memories).
"""

from memreader.front.async_memory import AsyncMemory
from memreader.front.home import data_home, default_store_url
from memreader.front.memory import SEARCH_FILTERS, AddResult, Memory

__all__ = ["SEARCH_FILTERS", "AddResult", "AsyncMemory", "Memory", "data_home", "default_store_url"]
