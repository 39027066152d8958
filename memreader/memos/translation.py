"""What a MemOS config became: one :class:`TranslationNote` per MemOS setting, gathered in a
:class:`Translation` that a user can read (``str(translation)``) and that is logged once when
the config is accepted."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["NoteKind", "Translation", "TranslationNote"]

logger = logging.getLogger("memreader.memos")

#: ``translated``: the setting has a memreader counterpart, now set; ``unused``: memreader has
#: none and ignoring it changes no result (said once, never silently); ``default``: a default
#: that differs between MemOS and memreader, and which one applies.
NoteKind = Literal["translated", "unused", "default"]


@dataclass(frozen=True)
class TranslationNote:
    """One MemOS setting (``llm.config.model_name_or_path``) and what it became (``llm.model``)
    or why nothing (``detail``)."""

    setting: str
    kind: NoteKind
    became: str = ""
    detail: str = ""

    def __str__(self) -> str:
        arrow = f" -> {self.became}" if self.became else ""
        why = f" ({self.detail})" if self.detail else ""
        return f"{self.kind:<10} {self.setting}{arrow}{why}"


@dataclass
class Translation:
    """A MemOS reader config and memreader's for it: ``config`` (the reader config mapping
    memreader validates) and ``notes``, one per MemOS setting, in the order read."""

    config: dict[str, Any] = field(default_factory=dict)
    notes: list[TranslationNote] = field(default_factory=list)

    def note(self, setting: str, kind: NoteKind, became: str = "", detail: str = "") -> None:
        """Record what ``setting`` became."""
        self.notes.append(TranslationNote(setting, kind, became, detail))

    def of_kind(self, kind: NoteKind) -> list[TranslationNote]:
        """The notes of one kind."""
        return [n for n in self.notes if n.kind == kind]

    def __str__(self) -> str:
        lines = ["MemOS config translated for memreader:"]
        lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)

    def log(self) -> None:
        """Log the report once: the whole of it at INFO, and one WARNING listing the settings
        memreader does not use (so they are never dropped silently)."""
        logger.info("%s", self)
        unused = self.of_kind("unused")
        if unused:
            logger.warning(
                "MemOS settings memreader has no counterpart for (ignored, results unchanged): %s",
                "; ".join(f"{n.setting} ({n.detail})" for n in unused),
            )
