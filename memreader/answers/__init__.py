"""What an agent's tools answer, whatever the protocol: the sizes a tool call may send and is
answered in (:mod:`memreader.answers.sizes`), and memories, hits, events, history and
categories as JSON a model reads easily, with where each memory came from
(:mod:`memreader.answers.shapes`). MCP's tools (:mod:`memreader.mcp`) and the framework
adapters (:mod:`memreader.integrations`) answer in these shapes, so an agent reads the same
provenance whichever door it came through."""
