"""Parsing: a normalised scene becomes the units the windower cuts, one per message part.

Each part type has a parser registered by name (:data:`PART_PARSERS`); a parser returns the
text to index for that part from its raw payload. Text parts are indexed verbatim (their spans
are provenance); other parts (images, files in chat, audio, tool calls) are indexed through a
placeholder that names them.
"""

from memreader.parsers.router import (
    PART_PARSERS,
    PartParser,
    PartRef,
    line_prefix,
    part_notes,
    scene_units,
)

__all__ = ["PART_PARSERS", "PartParser", "PartRef", "line_prefix", "part_notes", "scene_units"]
