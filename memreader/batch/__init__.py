"""Batch ingestion: YAML jobs over whole corpora, streaming, resumable, on one machine or Ray."""
