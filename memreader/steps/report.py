"""What a ``get_memory`` call reports besides its items: per-window status and LLM usage.

Pass ``report=ReadReport()`` to ``get_memory`` (or ``fine_transfer_simple_mem``) and read it
afterwards; the return value keeps its ``list[list[TextualMemoryItem]]`` shape.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from memreader.llms.usage import UsageSnapshot
from memreader.modes import Mode

logger = logging.getLogger(__name__)


@dataclass
class WindowReport:
    """One window's outcome.

    ``status`` is ``"ok"`` (items extracted, or a fast item), ``"fallback"`` (the raw window
    stands in for what the LLM failed to give; ``fallback_reason`` says why: ``timeout``,
    ``llm_error``, ``parse_error``, ``empty_response``, ``truncated``, ``empty``, ``blocked`` (an
    LLM interceptor blocked the call) or
    ``internal_error``), ``"empty"`` (the model found nothing and ``empty_window`` is
    ``"drop"``), ``"dropped"`` (a filter step such as ``min_length`` removed the window; ``error``
    says why) or ``"error"`` (not even the raw window could be made into an item; ``error`` says
    why, and the window's messages are in no item). ``uncited_messages`` lists the
    messages of the window that no fine item cites: they are in no fine item's sources.
    ``memories_over_limit`` counts memories the model gave beyond the 32 a window keeps.
    ``embedding_error`` is set when the window's items could not be embedded: they are
    returned without a vector and tagged ``embedding:failed``. ``unreadable_share`` is the
    share (0..1) of the letters of the window's embedded text that the embedder cannot read (a
    script it was not trained on, or characters it has no token for), or ``None`` when the
    embedder does not say (see :mod:`memreader.embedders.languages`). ``notes`` are remarks
    about a window that is not wrong but may not be what you expect: a window mostly unreadable
    to the embedder gets one, saying its vector says little about it. ``part_issues`` lists
    the window's parts that are unsupported or could not be read.
    """

    scene_index: int
    window_index: int
    status: str = "ok"
    #: Parts of the window that are not what they should be: unsupported types, and files,
    #: images or audio that could not be read (each: scene_index, message_index, part_index,
    #: type, status, reason). They keep their place in the window as placeholders.
    part_issues: list[dict[str, Any]] = field(default_factory=list)
    #: The extra fine passes that ran on this window and how each ended (``ok``, ``failed``,
    #: ``skipped``: e.g. the tool pass on a window without tool traffic).
    passes: dict[str, str] = field(default_factory=dict)
    items: int = 0
    language: str | None = None
    fallback_reason: str | None = None
    error: str | None = None
    truncated: bool = False
    filter_status: str = "skipped"
    filter_dropped: int = 0
    rewrite_status: str = "skipped"
    rewrite_changed: int = 0
    pass_errors: list[str] = field(default_factory=list)
    uncited_messages: list[int] = field(default_factory=list)
    memories_over_limit: int = 0
    embedding_error: str | None = None
    unreadable_share: float | None = None
    notes: list[str] = field(default_factory=list)

    def record_error(self, error: BaseException) -> None:
        """Mark this window as one whose items could not be made at all (logged with the
        traceback): one window's failure is that window's record, never the call's."""
        text = f"{type(error).__name__}: {error}"
        text = text if len(text) <= 300 else text[:297] + "..."
        logger.error(
            "scene %d, window %d: no item could be made: %s",
            self.scene_index,
            self.window_index,
            text,
            exc_info=error,
        )
        self.status, self.error, self.items = "error", text, 0


@dataclass
class PartReport:
    """What became of one part that is read from outside the text: a file, an image, audio, or
    a part of an unsupported type.

    ``status`` is ``"ok"`` (read: converted, prepared, transcribed or described),
    ``"reused"`` (the same content was already read in this call or a recent one: nothing was
    fetched or converted again), ``"unsupported"`` (kept as a placeholder: an unknown part type,
    or audio without a transcription model), ``"fallback"`` (an image the vision model could
    not describe: a fallback item stands in) or ``"error"`` (it could not be read; ``error``
    and ``error_type`` say why, and a placeholder keeps its place in the window). ``source`` is
    where it came from (a path, a URL without credentials or query, ``s3://bucket/key``, or
    ``inline``); ``digest`` is the sha256 of its bytes.
    """

    scene_index: int
    message_index: int
    part_index: int | None
    type: str
    status: str = "ok"
    source: str | None = None
    digest: str | None = None
    bytes: int = 0
    detail: str | None = None
    error: str | None = None
    error_type: str | None = None


@dataclass
class PassStats:
    """What one LLM pass of fine mode (extract, filter, rewrite, tool, preference, skill) did in a
    call: ``calls`` requests made (``attempts`` counts their retries and re-asks too), the
    tokens they used, ``failed_calls`` that ended in an error, ``windows`` the pass worked on,
    ``items`` (memories) it produced, and ``failed_windows`` where it failed (a fallback for
    extract; the other passes' failures lose only their own items)."""

    calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_calls: int = 0
    windows: int = 0
    items: int = 0
    failed_windows: int = 0


@dataclass
class ReadReport:
    """Per-window records, the LLM usage and the time of each step of one call.

    ``parts`` says what became of each file, image and audio part read from outside the text
    (and of each part of an unsupported type); ``resources`` counts the work done and saved on
    them: ``fetched``, ``fetch_reused``, ``converted``, ``conversion_reused``,
    ``images_prepared``, ``image_reused``, ``images_described``, ``description_reused``,
    ``transcribed``, ``transcription_reused``. ``passes`` says what each LLM pass of fine mode
    did (calls, tokens, windows, items, failures).
    """

    mode: Mode = "fast"
    windows: list[WindowReport] = field(default_factory=list)
    usage: UsageSnapshot | None = None
    #: Seconds spent in each step of the pipeline, by step name.
    steps: dict[str, float] = field(default_factory=dict)
    parts: list[PartReport] = field(default_factory=list)
    resources: dict[str, int] = field(default_factory=dict)
    #: Per LLM pass of fine mode, by pass name (see :class:`PassStats`).
    passes: dict[str, PassStats] = field(default_factory=dict)

    def pass_stats(self, name: str) -> PassStats:
        """The stats of pass ``name`` (made on first use)."""
        stats = self.passes.get(name)
        if stats is None:
            stats = self.passes[name] = PassStats()
        return stats

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the resource counter ``name``."""
        self.resources[name] = self.resources.get(name, 0) + n

    @property
    def fallbacks(self) -> list[WindowReport]:
        """Windows whose items are raw fallbacks."""
        return [w for w in self.windows if w.status == "fallback"]

    @property
    def errors(self) -> list[WindowReport]:
        """Windows that gave no item at all, or items without a vector."""
        return [w for w in self.windows if w.status == "error" or w.embedding_error]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        usage = None
        if self.usage is not None:
            usage = {
                "total": asdict(self.usage.total),
                "by_slot": {k: asdict(v) for k, v in self.usage.by_slot.items()},
                "requests": self.usage.requests,
            }
            if self.usage.by_profile:  # the calls named LLM profiles served
                usage["by_profile"] = {k: asdict(v) for k, v in self.usage.by_profile.items()}
                usage["requests_by_profile"] = dict(self.usage.requests_by_profile)
        return {
            "mode": self.mode,
            "windows": [asdict(w) for w in self.windows],
            "usage": usage,
            "steps": dict(self.steps),
            "parts": [asdict(p) for p in self.parts],
            "resources": dict(self.resources),
            "passes": {name: asdict(stats) for name, stats in self.passes.items()},
        }
