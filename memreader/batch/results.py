"""What became of one input of a batch job (:class:`InputResult`, with the :data:`COUNTERS` it
counts), what asks a running job to stop (:class:`CancelFlag`), and what a worker raises when
it did (:class:`InputCancelled`). The worker makes results, the engines carry them back, the
driver records them in the manifest and sums them into the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from memreader.batch.window_notes import NoteTally

__all__ = ["COUNTERS", "CancelFlag", "InputCancelled", "InputResult", "error_entry"]

#: What each input's result counts (summed into the job's summary).
COUNTERS = (
    "scenes",
    "messages",
    "windows",
    "items",
    "fallbacks",
    "failures",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "embeddings",
)
_SPENT = ("llm_calls", "prompt_tokens", "completion_tokens")


class CancelFlag(Protocol):
    """What asks a running job to stop: a :class:`threading.Event`, or a
    :class:`multiprocessing.Event` in a worker process."""

    def is_set(self) -> bool:
        """True once the job should stop."""
        ...


class InputCancelled(Exception):
    """Raised by :meth:`Worker.process` when the job is cancelled while it reads an input: the
    input's writer was discarded (nothing of it is published) and it has no manifest entry, so
    the manifest keeps what it said before and a rerun reads the input again.

    ``result``: when items of the input stay in the output all the same (a store's parts
    already written), a ``cancelled`` result counting them (``items``: the items written), so
    the job reports what it wrote; else ``None``."""

    def __init__(self, key: str, result: InputResult | None = None) -> None:
        super().__init__(key)
        self.result = result

    def __reduce__(self) -> tuple[type[InputCancelled], tuple[str, InputResult | None]]:
        # Sent back from worker processes whole (the default would drop ``result``).
        return (InputCancelled, (str(self.args[0]), self.result))


@dataclass
class InputResult:
    """What became of one input: ``done`` (its items committed; errors may be listed),
    ``failed`` (nothing of it was committed: ``error`` says why) or ``cancelled`` (cut short by
    a cancel after some of its items were written where they stay: see
    :class:`InputCancelled`; never recorded in the manifest)."""

    key: str
    digest: str
    status: str = "done"
    fingerprint: str = ""
    """What shaped the items (the job's, see :mod:`memreader.batch.fingerprint`); set by the
    driver before it records the result."""
    outputs: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    errors: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    owners: list[str] = field(default_factory=list)
    """The owners whose items the commit wrote (:attr:`InputWriter.owners`; not in the
    manifest): the driver hands them to :meth:`~memreader.batch.sinks.Sink.finish`."""
    notes: NoteTally = field(default_factory=NoteTally)
    """The windows with notes (not in the manifest): the driver says them in one line."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the manifest's entry for this input)."""
        return {
            "digest": self.digest,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "outputs": self.outputs,
            "counts": self.counts,
            "errors": self.errors,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_dict(cls, key: str, data: dict[str, Any]) -> InputResult:
        """Back from :meth:`to_dict`."""
        return cls(
            key=key,
            digest=str(data.get("digest", "")),
            status=str(data.get("status", "failed")),
            fingerprint=str(data.get("fingerprint") or ""),
            outputs=list(data.get("outputs") or []),
            counts={**dict.fromkeys(COUNTERS, 0), **(data.get("counts") or {})},
            errors=list(data.get("errors") or []),
            error=data.get("error"),
            seconds=float(data.get("seconds") or 0.0),
        )

    def fail(self, reason: str, message: str, kept: int = 0) -> None:
        """Make this the result of an input that was not committed: ``failed``, with the one
        error that says why. Counts of what was read are dropped; the LLM usage stays (it was
        spent), and so do the ``kept`` items written before the failure where they stay (a
        store's parts: ``items`` counts them and the error says so; a rerun reads the input
        again, to the same rows)."""
        spent = {name: self.counts.get(name, 0) for name in _SPENT}
        self.counts = {**dict.fromkeys(COUNTERS, 0), **spent, "failures": 1, "items": kept}
        if kept:
            message += f" ({kept} items written before the failure stay in the output)"
        self.outputs = []
        self.errors = [error_entry(self.key, None, None, reason, message)]
        self.notes = NoteTally()
        self.status, self.error = "failed", f"{reason}: {message}"[:500]


def error_entry(
    key: str, scene: int | None, window: int | None, reason: str, message: str
) -> dict[str, Any]:
    """One entry of the errors file: the input, the scene and window (when known), the typed
    reason and the message (cut at 500 characters)."""
    return {
        "input": key,
        "scene": scene,
        "window": window,
        "reason": reason,
        "message": message[:500],
    }
