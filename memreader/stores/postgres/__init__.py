"""The PostgreSQL memory store (``postgresql://...``, pgvector): the store, its session,
operations, writes, schema, text search and categories.

This package imports nothing on its own: import the module you need.
"""
