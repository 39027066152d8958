"""Message parts resolved: what a file, image or audio part points at, fetched once per
content, then converted, prepared or transcribed into what the part becomes.

- :mod:`~memreader.parts.tasks`: what a part asks to read (a
  :class:`~memreader.parts.tasks.PartTask`);
- :mod:`~memreader.parts.resources`: the
  :class:`~memreader.parts.resources.ResourceReader` that reads many parts at once and shares
  the work (one fetch per reference, one conversion per content);
- :mod:`~memreader.parts.resolved`: what a part became, or the placeholder that keeps its place;
- :mod:`~memreader.parts.images` and :mod:`~memreader.parts.audio`: images checked and
  re-encoded, audio transcribed;
- :mod:`~memreader.parts.settings`: the settings of images and of transcription.

What it may import: :mod:`memreader.documents` (converting a file part's bytes),
:mod:`memreader.fetch` (the bytes), :mod:`memreader.transport` and the root leaves; never the
steps, readers or anything else above it.

This package imports nothing on its own: import the module you need.
"""
