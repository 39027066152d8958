"""MemOS's memory items as data: a MemOS item's dict read as memreader's (``items_in``) and
memreader's written in MemOS's shape (``items_out``). Pure dict work over
:mod:`memreader.errors`, so :mod:`memreader.items` reads and writes MemOS items itself; the
MemOS-compatible front door is :mod:`memreader.memos`."""
