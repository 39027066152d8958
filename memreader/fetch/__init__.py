"""Fetching: every byte that comes from outside a call's input (http(s) URLs, S3 objects,
data URLs, local files named in parts), within its settings and limits.

This package imports nothing on its own: import the module you need.
"""
