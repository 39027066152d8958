"""Scenes: the typed model of what a call reads (chats, documents), chat input normalised
into it, content parts as the chat APIs send them, chat times, text checks and bounded
rendering of caller data.

This package imports nothing on its own: import the module you need.
"""
