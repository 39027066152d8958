"""Token usage: a small addable :class:`Usage` and a thread-safe :class:`UsageMeter`.

A reader owns one meter; every client it builds records into it. To know what one
``get_memory`` call spent, take a child meter for the call and pass it to each LLM call::

    call_meter = reader_meter.child()
    router.complete("llm", messages, meter=call_meter)
    call_meter.snapshot().total

A child forwards everything it records to its parent, so the reader's totals stay complete.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Usage", "UsageMeter", "UsageSnapshot"]


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more requests. ``a + b`` sums field by field."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, prompt_tokens: int | None, completion_tokens: int | None) -> Usage:
        """Build a usage from possibly missing counts; ``total_tokens`` is their sum."""
        p = int(prompt_tokens or 0)
        c = int(completion_tokens or 0)
        return cls(p, c, p + c)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.total_tokens - other.total_tokens,
        )

    def __bool__(self) -> bool:
        return bool(self.prompt_tokens or self.completion_tokens or self.total_tokens)


_EMPTY: Mapping[str, Usage] = MappingProxyType({})
_EMPTY_COUNTS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True)
class UsageSnapshot:
    """A frozen copy of a meter: totals, per-slot usage and request counts.

    ``later - earlier`` gives what was spent in between; ``a + b`` adds two calls' usage.
    """

    total: Usage = Usage()
    by_slot: Mapping[str, Usage] = field(default_factory=lambda: _EMPTY)
    requests: int = 0
    requests_by_slot: Mapping[str, int] = field(default_factory=lambda: _EMPTY_COUNTS)

    def __add__(self, other: UsageSnapshot) -> UsageSnapshot:
        if not isinstance(other, UsageSnapshot):
            return NotImplemented
        by_slot = dict(self.by_slot)
        for slot, usage in other.by_slot.items():
            by_slot[slot] = by_slot.get(slot, Usage()) + usage
        counts = dict(self.requests_by_slot)
        for slot, n in other.requests_by_slot.items():
            counts[slot] = counts.get(slot, 0) + n
        return UsageSnapshot(
            total=self.total + other.total,
            by_slot=MappingProxyType(by_slot),
            requests=self.requests + other.requests,
            requests_by_slot=MappingProxyType(counts),
        )

    def __sub__(self, other: UsageSnapshot) -> UsageSnapshot:
        if not isinstance(other, UsageSnapshot):
            return NotImplemented
        by_slot = {
            slot: usage - other.by_slot.get(slot, Usage()) for slot, usage in self.by_slot.items()
        }
        counts = {
            slot: n - other.requests_by_slot.get(slot, 0)
            for slot, n in self.requests_by_slot.items()
        }
        return UsageSnapshot(
            total=self.total - other.total,
            by_slot=MappingProxyType({k: v for k, v in by_slot.items() if v or counts.get(k)}),
            requests=self.requests - other.requests,
            requests_by_slot=MappingProxyType({k: v for k, v in counts.items() if v}),
        )


class UsageMeter:
    """Sums token usage per slot and in total; safe to share between threads.

    Args:
        parent: a meter that receives everything this one records (see :meth:`child`).
    """

    def __init__(self, parent: UsageMeter | None = None) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self._total = Usage()
        self._by_slot: dict[str, Usage] = {}
        self._requests = 0
        self._requests_by_slot: dict[str, int] = {}

    def add(self, slot: str, usage: Usage, *, requests: int = 1) -> None:
        """Record ``usage`` spent by ``requests`` requests of ``slot`` (here and in ancestors)."""
        meter: UsageMeter | None = self
        while meter is not None:
            with meter._lock:
                meter._total = meter._total + usage
                meter._by_slot[slot] = meter._by_slot.get(slot, Usage()) + usage
                meter._requests += requests
                meter._requests_by_slot[slot] = meter._requests_by_slot.get(slot, 0) + requests
            meter = meter.parent

    @property
    def total(self) -> Usage:
        """Everything recorded since creation."""
        with self._lock:
            return self._total

    def snapshot(self) -> UsageSnapshot:
        """A consistent frozen copy of the counters."""
        with self._lock:
            return UsageSnapshot(
                total=self._total,
                by_slot=MappingProxyType(dict(self._by_slot)),
                requests=self._requests,
                requests_by_slot=MappingProxyType(dict(self._requests_by_slot)),
            )

    def child(self) -> UsageMeter:
        """A new meter whose records also go to this one."""
        return UsageMeter(parent=self)

    def __repr__(self) -> str:
        snap = self.snapshot()
        return f"UsageMeter(total={snap.total}, requests={snap.requests})"
