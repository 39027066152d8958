"""Message parts resolved: what a file, image or audio part points at, fetched once per
content, then converted, prepared or transcribed into what the part becomes.

This package imports nothing on its own: import the module you need.
"""
