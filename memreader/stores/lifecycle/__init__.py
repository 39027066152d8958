"""The life of a memory after it is written: an owner's budget of active memories and the pins
that keep a memory out of it (:mod:`~memreader.stores.lifecycle.api`), the priority the budget
expires by (:mod:`~memreader.stores.lifecycle.priority`), its settings
(:mod:`~memreader.stores.lifecycle.config`), and ``maintain``: the delayed purge, the budgets
and the index's repair (:mod:`~memreader.stores.lifecycle.maintain`); the index checked on open
(:mod:`~memreader.stores.lifecycle.index_check`)."""

from __future__ import annotations

from memreader.stores.lifecycle.api import BUDGET_REASON
from memreader.stores.lifecycle.config import IndexConfig, LifecycleConfig, check_lifecycle
from memreader.stores.lifecycle.index_check import IndexHealth
from memreader.stores.lifecycle.maintain import MaintainReport
from memreader.stores.lifecycle.priority import PriorityFacts, lowest, priority

__all__ = [
    "BUDGET_REASON",
    "IndexConfig",
    "IndexHealth",
    "LifecycleConfig",
    "MaintainReport",
    "PriorityFacts",
    "check_lifecycle",
    "lowest",
    "priority",
]
