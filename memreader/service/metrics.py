"""``GET /metrics``: Prometheus text, one registry per app.

Requests (by route, method and status) and their latency; the LLM calls and tokens of reads
and refinements (from each call's report); windows read, by status; jobs, by outcome; the
index check and repair at start-up (:mod:`memreader.service.index_repair`).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from memreader.steps.report import ReadReport

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Reads take milliseconds (fast mode, short chats) to minutes (fine mode, long documents).
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class ServiceMetrics:
    """The service's counters (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._request_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self.requests = Counter(
            "memreader_http_requests",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memreader_http_request_duration_seconds",
            "Time to answer a request",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "memreader_http_requests_in_flight",
            "Requests being answered",
            registry=self.registry,
        )
        self.llm_calls = Counter(
            "memreader_llm_calls",
            "LLM requests made by reads and refinements",
            ["slot"],
            registry=self.registry,
        )
        self.llm_tokens = Counter(
            "memreader_llm_tokens",
            "LLM tokens used by reads and refinements",
            ["slot", "kind"],
            registry=self.registry,
        )
        self.windows = Counter(
            "memreader_windows",
            "Windows read, by status",
            ["mode", "status"],
            registry=self.registry,
        )
        self.items = Counter(
            "memreader_items", "Memory items made", ["mode"], registry=self.registry
        )
        self.jobs = Counter(
            "memreader_jobs",
            "Batch jobs ended, by outcome",
            ["outcome"],
            registry=self.registry,
        )

        self.index_unindexed = Gauge(
            "memreader_index_unindexed",
            "Active memories the vector search cannot find, by cause (missing: no vector; "
            "foreign: another model's), as last counted",
            ["cause"],
            registry=self.registry,
        )
        self.index_repaired = Counter(
            "memreader_index_repaired",
            "Memories embedded again by the index repair at start-up",
            registry=self.registry,
        )
        self.index_checks = Counter(
            "memreader_index_checks",
            "Index checks at start-up, by outcome",
            ["outcome"],
            registry=self.registry,
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        key = (method, route, str(status))
        children = self._request_children.get(key)
        if children is None:
            # Looked up once per method, route template and status (all bounded), not per
            # request: ``labels()`` checks and joins its values on every call.
            children = (
                self.requests.labels(*key),
                self.latency.labels(method, route),
            )
            self._request_children[key] = children
        counted, timed = children
        counted.inc()
        timed.observe(seconds)

    def observe_read(self, report: ReadReport, items: int) -> None:
        """Count a read's windows, items and LLM usage."""
        for window in report.windows:
            self.windows.labels(report.mode, window.status).inc()
        self.items.labels(report.mode).inc(items)
        if report.usage is None:
            return
        for slot, calls in report.usage.requests_by_slot.items():
            self.llm_calls.labels(slot).inc(calls)
        for slot, usage in report.usage.by_slot.items():
            self.llm_tokens.labels(slot, "prompt").inc(usage.prompt_tokens)
            self.llm_tokens.labels(slot, "completion").inc(usage.completion_tokens)

    def render(self) -> bytes:
        """The Prometheus text of every counter."""
        return generate_latest(self.registry)
