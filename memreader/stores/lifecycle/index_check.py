"""The index, checked on open: how many active memories a store's vector search cannot find
(:class:`IndexHealth`, :func:`index_health`), and what ``Memory`` does about them when it
opens its store (:func:`check_on_open`, as the reader config's ``index:`` section says).

A memory is out of the vector index when its row has **no vector** (written ``text_only``,
or its embedding failed) or a vector of **another model** than the store's embedder (the
embedder was changed; a vector stored without a model name counts as one: it cannot be told
apart). Full-text search still finds them; ``maintain`` embeds them again. The count is two
aggregate queries over the active rows (no item is decoded), cheap enough to run on every
open (benchmarks/RESULTS.md, "Index check on open"). Vectors without a direction (a NaN, all
zeros) are not counted here (that needs every vector read); ``maintain`` repairs them too.

>>> from memreader.stores import open_store
>>> from memreader.testing import HashEmbedder
>>> with open_store("sqlite://:memory:", embedder=HashEmbedder()) as store:
...     _ = store.add_memory("Ana keeps bees.", user_id="ana")
...     health = store.index_health()
>>> health.active, health.unindexed, health.ok
(1, 0, True)
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded, MemReaderError
from memreader.stores.embedder_rules import foreign_models
from memreader.stores.lifecycle.config import IndexConfig
from memreader.stores.lifecycle.maintain import MaintainReport, repair_index
from memreader.stores.urls import public_url

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = ["IndexHealth", "check_on_open", "index_health", "store_name"]

logger = logging.getLogger(__name__)

#: Stores one process remembers having warned about (past it, it starts again).
_WARNED_MAX = 10_000
_WARNED: set[str] = set()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class IndexHealth:
    """What a store's vector index lacks, counted now.

    Attributes:
        store: the store, as logs may show it (no password).
        active: active memories.
        missing: active memories without a vector (0 in a text-only store: it has no index).
        foreign: active memories with another model's vector, by model (``""``: stored
            without a model name).
        embedder: the model the store embeds with; ``None``: text only, or a nameless
            embedder (then no vector can be told foreign).
        text_only: the store was opened without an embedder (nothing to repair).

    >>> IndexHealth("sqlite:///m.db", 5, 2, {"hash:64": 1}, "local:m").unindexed
    3
    """

    store: str
    active: int
    missing: int
    foreign: dict[str, int] = field(default_factory=dict)
    embedder: str | None = None
    text_only: bool = False

    @property
    def unindexed(self) -> int:
        """The active memories the vector search cannot find (what a repair embeds again)."""
        return self.missing + sum(self.foreign.values())

    @property
    def ok(self) -> bool:
        """Whether every active memory is in the vector index (always, text only)."""
        return self.unindexed == 0

    @property
    def command(self) -> str:
        """The command that repairs them (its ``--config`` must name this embedder).

        >>> IndexHealth("sqlite:///m.db", 1, 1).command
        'memreader maintain --store sqlite:///m.db --config READER.yaml'
        """
        return f"memreader maintain --store {self.store} --config READER.yaml"

    def message(self) -> str:
        """One sentence: the counts, by cause, and how to repair them."""
        parts = []
        if self.missing:
            parts.append(f"{self.missing} without a vector")
        if self.foreign:
            models = ", ".join(
                f"{m or '(unnamed)'!r}: {n}" for m, n in sorted(self.foreign.items())
            )
            parts.append(
                f"{sum(self.foreign.values())} embedded with another model than "
                f"{self.embedder!r} ({models})"
            )
        return (
            f"store {self.store}: {self.unindexed} of {self.active} active memories are not in "
            f"the vector index ({'; '.join(parts)}); search finds them by words only. Repair: "
            f"`{self.command}` (READER.yaml: the reader config whose embedder is "
            f"{self.embedder!r}), or Memory(...).maintain() in Python, or set "
            "`index: {on_open: repair}` in the reader config"
        )

    def to_dict(self) -> dict[str, Any]:
        """The health as JSON-ready data."""
        return {
            "store": self.store,
            "active": self.active,
            "unindexed": self.unindexed,
            "missing": self.missing,
            "foreign": dict(sorted(self.foreign.items())),
            "embedder": self.embedder,
            "text_only": self.text_only,
            "command": None if self.ok else self.command,
        }


def index_health(store: StoreBackend, *, url: str | None = None) -> IndexHealth:
    """Count, now, the active memories of every owner that ``store``'s vector search cannot
    find (see the module docstring); ``url`` names the store in the health's command
    (default: the URL of its file or database; a password is masked).

    Raises:
        StoreError: the store failed, or cannot count (a backend without a budget).
    """
    active = sum(store._active_counts(None).values())
    where = public_url(url) if url else store_name(store)
    if store.embedder is None:
        return IndexHealth(where, active, 0, text_only=True)
    name = getattr(store.embedder, "name", None)
    found = store._embedding_models(None)
    missing = max(0, active - sum(found.values()))  # a write between the two counts
    model = name if isinstance(name, str) else None
    foreign: dict[str, int] = {}
    if model is not None:
        foreign = foreign_models(model, found)
        if found.get(""):
            foreign[""] = found[""]
    return IndexHealth(where, active, missing, foreign, model)


def store_name(store: StoreBackend) -> str:
    """The URL ``store`` was opened from by :func:`~memreader.stores.open_store`, as logs may
    show it (no password); else its SQLite file's, else its ``repr``.

    >>> from memreader.stores import open_store
    >>> with open_store("sqlite://:memory:", text_only=True) as store:
    ...     store_name(store)
    'sqlite://:memory:'
    """
    opened = getattr(store, "opened_from", None)
    if isinstance(opened, str):
        return opened
    path = getattr(store, "path", None)
    if isinstance(path, str):  # the embedded store's file
        return "sqlite://:memory:" if path == ":memory:" else f"sqlite:///{path}"
    return repr(store)


def check_on_open(store: StoreBackend, config: IndexConfig) -> IndexHealth | MaintainReport | None:
    """What ``Memory`` does when it opens ``store`` (``config.on_open``): ``warn``, one
    warning per store and process naming the counts and the command; ``repair``, the repair
    ``maintain`` runs, within ``config.repair_within_s`` (what is left is logged); ``ignore``,
    nothing. Returns the health counted (``warn``; ``None`` without counting once this
    process has warned about the store), the repair's report (``repair``, when there was
    something to repair), or ``None``. Never raises: a store that cannot be counted
    or repaired is still opened, and the failure is logged."""
    if config.on_open == "ignore":
        return None
    if config.on_open == "warn" and _warned(store_name(store)):
        return None  # said once in this process already: counting again would change nothing
    try:
        health = index_health(store)
    except MemReaderError as exc:
        logger.warning("the index of %r could not be checked on open: %s", store, exc)
        return None
    if health.ok:
        return health
    if config.on_open == "warn":
        _warn_once(health)
        return health
    return _repair_on_open(store, health, config.repair_within_s)


def _warned(name: str) -> bool:
    with _LOCK:
        return name in _WARNED


def _warn_once(health: IndexHealth) -> None:
    with _LOCK:
        if health.store in _WARNED:
            return
        if len(_WARNED) >= _WARNED_MAX:
            _WARNED.clear()
        _WARNED.add(health.store)
    logger.warning("%s", health.message())


def _repair_on_open(
    store: StoreBackend, health: IndexHealth, within_s: float
) -> MaintainReport | None:
    deadline = Deadline(within_s, what="the index repair on open")
    try:
        report = repair_index(store, deadline=deadline)
    except DeadlineExceeded:
        logger.warning(
            "store %s: the repair on open stopped after %gs (what it repaired stays); "
            "for the rest run `%s`",
            health.store,
            within_s,
            health.command,
        )
        return None
    except MemReaderError as exc:
        logger.warning("store %s: the repair on open failed: %s", health.store, exc)
        return None
    level = logging.INFO if report.complete else logging.WARNING
    logger.log(level, "store %s: repair on open: %s", health.store, "; ".join(report.lines()))
    return report
