"""What retrieval shares between the stores and the front door: the terms a full-text search
matches (:mod:`~memreader.retrieval.terms`, Chinese, Japanese and Korean included) and the
passages a stored memory is cut into (:mod:`~memreader.retrieval.passages`)."""
