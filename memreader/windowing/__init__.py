"""Windowing: the parsers that make a scene's units, token counting, the token-bounded
windows cut over the units, the strategy reader's message groups, and each window's
provenance (its segments as sources).

This package imports nothing on its own: import the module you need.
"""
