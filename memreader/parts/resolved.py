"""What a part became (:class:`Resolved`), and how content made once (converted text, a
prepared image, a transcript) becomes each part's :class:`Resolved`, or a placeholder that keeps
the part's place in its window when it could not be read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memreader.errors import MemReaderError
from memreader.parts.tasks import PartTask

if TYPE_CHECKING:
    from memreader.fetch.fetcher import Fetched
    from memreader.parts.images import PreparedImage

__all__ = [
    "AudioMade",
    "DocumentMade",
    "ImageMade",
    "Made",
    "Resolved",
    "part_label",
    "placeholder",
    "reused",
]

#: Placeholder reasons are clipped to this many characters.
_REASON_LIMIT = 200


@dataclass
class Resolved:
    """What a part became.

    ``text`` is what the part shows in its window: a document's converted text or an audio's
    transcript (``exact``: spans index it), or a line describing an image, or a placeholder
    naming what could not be read and why. ``image`` is the prepared image (for the vision
    model); ``error`` the typed error of a part that failed; ``kept_image`` the prepared image
    as a ``data:`` URL when the part's sources keep it (an inline image within
    ``images.keep_inline_bytes``).
    """

    status: str
    text: str
    exact: bool = False
    source: str | None = None
    digest: str | None = None
    bytes: int = 0
    detail: str | None = None
    image: PreparedImage | None = None
    error: MemReaderError | None = None
    reused: bool = False
    kept_image: str | None = None


class Made:
    """What was made of some content (kept by content key); :meth:`__call__` makes a part's
    :class:`Resolved` from it."""

    def __call__(self, task: PartTask, fetched: Fetched) -> Resolved:
        raise NotImplementedError


@dataclass(frozen=True)
class DocumentMade(Made):
    """A document's converted text."""

    text: str

    def __call__(self, task: PartTask, fetched: Fetched) -> Resolved:
        return Resolved(
            "ok",
            self.text,
            exact=True,
            source=fetched.source,
            digest=fetched.digest,
            bytes=len(fetched.data),
            detail=f"{len(self.text)} characters",
        )


@dataclass(frozen=True)
class ImageMade(Made):
    """A prepared image."""

    image: PreparedImage

    def __call__(self, task: PartTask, fetched: Fetched) -> Resolved:
        return Resolved(
            "ok",
            self.image.describe(fetched.source or "inline"),
            source=fetched.source,
            digest=fetched.digest,
            bytes=len(fetched.data),
            detail=f"{self.image.format} {self.image.width}x{self.image.height}",
            image=self.image,
        )


@dataclass(frozen=True)
class AudioMade(Made):
    """An audio's transcript (``None``: no transcription model is configured)."""

    transcript: str | None

    def __call__(self, task: PartTask, fetched: Fetched) -> Resolved:
        common: dict[str, Any] = {
            "source": fetched.source,
            "digest": fetched.digest,
            "bytes": len(fetched.data),
        }
        if self.transcript is None:
            reason = "not transcribed: no transcription model is configured"
            return Resolved(
                "unsupported", placeholder(task, reason, fetched), detail=reason, **common
            )
        return Resolved("ok", self.transcript, exact=True, detail="transcribed", **common)


def reused(result: Resolved) -> Resolved:
    """``result`` as a part that shares another part's reading gets it."""
    if result.status not in ("ok", "unsupported"):
        return result
    # replace(), not a field-by-field copy: a field added to Resolved later carries over.
    return replace(result, status="reused" if result.status == "ok" else result.status, reused=True)


def part_label(task: PartTask, fetched: Fetched | None = None) -> str:
    """How messages name a part: its file name, else its source, else its kind."""
    if fetched is not None and fetched.name:
        return fetched.name
    if task.name:
        return os.path.basename(task.name)
    if fetched is not None and fetched.source not in ("", "inline"):
        return fetched.source
    return task.kind if task.kind != "document" else "file"


def placeholder(task: PartTask, reason: str, fetched: Fetched | None = None) -> str:
    """The text that stands in a window for a part that was not read, naming it and why."""
    what = {"document": "file", "image": "image", "audio": "audio"}[task.kind]
    label = part_label(task, fetched)
    size = f", {_size(len(fetched.data))}" if fetched is not None else ""
    reason = reason if len(reason) <= _REASON_LIMIT else reason[: _REASON_LIMIT - 3] + "..."
    if label in (what, "file"):
        return f"[{what}{size}: {reason}]"
    return f"[{what}: {label}{size}: {reason}]"


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.0f} KB"
