"""MemOS's reader configs, as data: translated into memreader's with a report of what each
setting became (``config_shapes``, ``backends``, ``notes``). Pure dict work over
:mod:`memreader.config` and :mod:`memreader.llms`, so :mod:`memreader.factory` accepts a MemOS
config without importing the MemOS-compatible front door, :mod:`memreader.memos`, which sits
above the readers (MemOS's items: :mod:`memreader.memos_items`)."""
