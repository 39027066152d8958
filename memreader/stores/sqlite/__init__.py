"""The embedded SQLite memory store (``sqlite:///path``): the store, its operations,
writes, schema, categories and in-process vector search.

This package imports nothing on its own: import the module you need.
"""
