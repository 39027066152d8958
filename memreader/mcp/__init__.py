"""``memreader mcp``: memory for any agent that speaks the Model Context Protocol.

A server on the official SDK (``mcp`` on PyPI, the ``mcp`` extra) over the same
:class:`~memreader.front.memory.Memory` the library uses: tools to remember, recall, build a
prompt-ready context, read, change and forget memories, and a user's Markdown memory as
resources. Over stdio it serves the one user named at start; over streamable HTTP the keys of
``memreader serve`` decide. One module per concern:

- :mod:`memreader.mcp.server`: the SDK server, and what every call goes through (arguments
  checked, user decided, deadline, typed errors as tool errors);
- :mod:`memreader.mcp.tools` and :mod:`memreader.mcp.arguments`: the tools and their schemas;
- :mod:`memreader.mcp.resources`: the Markdown files under ``memreader://users/...`` URIs;
- :mod:`memreader.mcp.users`: who the caller is and whose memories it may touch;
- :mod:`memreader.mcp.deadlines`: each call's deadline; its sizes and answers are
  :mod:`memreader.answers` (shared with the framework adapters);
- :mod:`memreader.mcp.stdio` and :mod:`memreader.mcp.http`: the two transports.
"""
