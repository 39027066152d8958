"""Image parts: a short description of the image, never its bytes."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part


def describe_url(label: str, url: str) -> str:
    """``[label: URL]``; a data URL is described (type and size), never copied.

    >>> describe_url("image", "data:image/png;base64,iVBORw0KGgo=")
    '[image: inline image/png, 34 characters]'
    """
    if url[:5].lower() == "data:":
        # A data URL can be megabytes of base64: describe it, never copy it into a memory.
        media = url[5:].split(";", 1)[0].split(",", 1)[0] or "unknown type"
        return f"[{label}: inline {media}, {len(url)} characters]"
    return f"[{label}: {url}]"


@PART_PARSERS.register("image_url")
def parse_image(part: Part, message: Message) -> str:
    """What a reader wrote for the image (its description), else ``[image: URL]``."""
    return part.text or describe_url("image", str(part.payload))
