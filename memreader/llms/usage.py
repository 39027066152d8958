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
from typing import TypeVar

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
    """A frozen copy of a meter: totals, per-slot usage and request counts, and the same per
    named LLM profile (``by_profile``, ``requests_by_profile``: only the calls a profile of
    ``llm_profiles`` served).

    ``later - earlier`` gives what was spent in between; ``a + b`` adds two calls' usage.
    """

    total: Usage = Usage()
    by_slot: Mapping[str, Usage] = field(default_factory=lambda: _EMPTY)
    requests: int = 0
    requests_by_slot: Mapping[str, int] = field(default_factory=lambda: _EMPTY_COUNTS)
    by_profile: Mapping[str, Usage] = field(default_factory=lambda: _EMPTY)
    requests_by_profile: Mapping[str, int] = field(default_factory=lambda: _EMPTY_COUNTS)

    def __add__(self, other: UsageSnapshot) -> UsageSnapshot:
        if not isinstance(other, UsageSnapshot):
            return NotImplemented
        return UsageSnapshot(
            total=self.total + other.total,
            by_slot=_summed(self.by_slot, other.by_slot, Usage()),
            requests=self.requests + other.requests,
            requests_by_slot=_summed(self.requests_by_slot, other.requests_by_slot, 0),
            by_profile=_summed(self.by_profile, other.by_profile, Usage()),
            requests_by_profile=_summed(self.requests_by_profile, other.requests_by_profile, 0),
        )

    def __sub__(self, other: UsageSnapshot) -> UsageSnapshot:
        if not isinstance(other, UsageSnapshot):
            return NotImplemented
        by_slot, counts = _less(
            self.by_slot, other.by_slot, self.requests_by_slot, other.requests_by_slot
        )
        by_profile, profile_counts = _less(
            self.by_profile, other.by_profile, self.requests_by_profile, other.requests_by_profile
        )
        return UsageSnapshot(
            total=self.total - other.total,
            by_slot=by_slot,
            requests=self.requests - other.requests,
            requests_by_slot=counts,
            by_profile=by_profile,
            requests_by_profile=profile_counts,
        )


V = TypeVar("V", Usage, int)


def _summed(a: Mapping[str, V], b: Mapping[str, V], zero: V) -> Mapping[str, V]:
    summed = dict(a)
    for key, value in b.items():
        summed[key] = summed.get(key, zero) + value
    return MappingProxyType(summed)


def _less(
    usage: Mapping[str, Usage],
    earlier_usage: Mapping[str, Usage],
    counts: Mapping[str, int],
    earlier_counts: Mapping[str, int],
) -> tuple[Mapping[str, Usage], Mapping[str, int]]:
    """Per-key usage and counts of ``usage``/``counts`` less the earlier ones (keys left with
    nothing are dropped)."""
    spent = {key: u - earlier_usage.get(key, Usage()) for key, u in usage.items()}
    made = {key: n - earlier_counts.get(key, 0) for key, n in counts.items()}
    return (
        MappingProxyType({k: v for k, v in spent.items() if v or made.get(k)}),
        MappingProxyType({k: v for k, v in made.items() if v}),
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
        self._by_profile: dict[str, Usage] = {}
        self._requests_by_profile: dict[str, int] = {}

    def add(
        self, slot: str, usage: Usage, *, requests: int = 1, profile: str | None = None
    ) -> None:
        """Record ``usage`` spent by ``requests`` requests of ``slot`` (here and in ancestors),
        and of the named LLM profile that served them, if one did."""
        meter: UsageMeter | None = self
        while meter is not None:
            with meter._lock:
                meter._total = meter._total + usage
                meter._by_slot[slot] = meter._by_slot.get(slot, Usage()) + usage
                meter._requests += requests
                meter._requests_by_slot[slot] = meter._requests_by_slot.get(slot, 0) + requests
                if profile is not None:
                    meter._by_profile[profile] = meter._by_profile.get(profile, Usage()) + usage
                    counts = meter._requests_by_profile
                    counts[profile] = counts.get(profile, 0) + requests
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
                by_profile=MappingProxyType(dict(self._by_profile)),
                requests_by_profile=MappingProxyType(dict(self._requests_by_profile)),
            )

    def child(self) -> UsageMeter:
        """A new meter whose records also go to this one."""
        return UsageMeter(parent=self)

    def __repr__(self) -> str:
        snap = self.snapshot()
        return f"UsageMeter(total={snap.total}, requests={snap.requests})"
