"""The passages of stored memories: the rows a write adds beside each memory (spans and
vectors, :mod:`~memreader.stores.passages.rows`) and how a search scores them
(:mod:`~memreader.stores.passages.scoring`)."""
