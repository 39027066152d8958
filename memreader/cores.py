"""The cores a process may use, its share of them, and which cores each of ``memreader serve
--workers N``'s processes is given.

One place for the arithmetic that the local embedder (ONNX Runtime's threads per session), the
service (reads run at once per worker) and the workers' supervisor all rely on. A worker is
*pinned* when its supervisor gave it cores of its own (CPU affinity, :func:`worker_cores`): its
affinity is then its share already, and nothing divides it again.

Why pin: a search hops from the event loop's thread to a store thread and back. When the kernel
runs the two threads, or the two workers, on different cores by turns, each hop finds the
search's data (the cached vectors, the Python objects of the request) in another core's cache.
Measured on a 2-core AMD EPYC VM, 2 workers, side by side (benchmarks/RESULTS.md, issue 42):
0-10% less server CPU per search and up to an eighth more searches a second with each worker
on its own core, never more CPU beyond the noise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

__all__ = [
    "PINNED_ENV",
    "PROCESSES_ENV",
    "available_cores",
    "core_share",
    "pin_to",
    "placements",
    "usable_cores",
    "worker_cores",
]

logger = logging.getLogger(__name__)

#: Processes on this machine sharing its cores (``memreader serve --workers N`` sets it for its
#: workers); each takes its share (:func:`core_share`).
PROCESSES_ENV = "MEMREADER_WORKER_PROCESSES"
#: Set in a worker its supervisor pinned (:func:`pin_to`): its affinity is its share.
PINNED_ENV = "MEMREADER_WORKER_PINNED"


def usable_cores() -> list[int]:
    """The cores this process may run on (its CPU affinity), in order; where the platform
    cannot tell (not Linux), ``0 .. cpu_count - 1``."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(max(1, os.cpu_count() or 1)))


def available_cores() -> int:
    """How many cores this process may run on, at least 1."""
    return max(1, len(usable_cores()))


def core_share() -> int:
    """This process's share of the cores: those it may run on, divided among the
    :data:`PROCESSES_ENV` processes that share them (at least 1); a pinned worker's own.

    >>> os.environ[PROCESSES_ENV] = str(available_cores()); core_share()
    1
    >>> del os.environ[PROCESSES_ENV]; core_share() == available_cores()
    True
    """
    if os.environ.get(PINNED_ENV) == "1":
        return available_cores()
    try:
        processes = max(1, int(os.environ.get(PROCESSES_ENV, "1")))
    except ValueError:
        processes = 1
    return max(1, available_cores() // processes)


def worker_cores(
    index: int, workers: int, cores: Sequence[int], pin: bool | None = None
) -> list[int] | None:
    """The cores worker ``index`` of ``workers`` runs on, out of ``cores``; ``None``: wherever
    the kernel puts it.

    ``pin`` ``None`` (auto): pinned when there are several workers and no more than the cores,
    each on its own contiguous slice (the slices never overlap, and together they are every
    core). ``True``: pinned whenever there are several workers; beyond the cores, worker ``i``
    on core ``i mod cores``. ``False``: never.

    >>> [worker_cores(i, 2, [0, 1, 2, 3, 4]) for i in range(2)]
    [[0, 1], [2, 3, 4]]
    >>> worker_cores(0, 3, [0, 1]) is None, worker_cores(2, 3, [0, 1], pin=True)
    (True, [0])
    """
    count = len(cores)
    if pin is False or workers <= 1 or count == 0 or not 0 <= index < workers:
        return None
    if workers > count:
        return [cores[index % count]] if pin else None
    return list(cores[index * count // workers : (index + 1) * count // workers])


def placements(workers: int, pin: bool | None = None) -> list[list[int] | None]:
    """The cores of each of ``workers`` (:func:`worker_cores` over this process's cores);
    where the platform cannot pin (not Linux), none unless ``pin`` asks for it (then each
    worker says it could not)."""
    if pin is None and not hasattr(os, "sched_setaffinity"):
        return [None] * workers
    cores = usable_cores()
    return [worker_cores(index, workers, cores, pin) for index in range(workers)]


def pin_to(cores: Sequence[int]) -> bool:
    """Run this process (and the threads and processes it starts from now on) on ``cores``
    only, and mark it pinned (:data:`PINNED_ENV`); a platform or a container that refuses is
    logged and the process runs where it did (``False``)."""
    try:
        os.sched_setaffinity(0, set(cores))
    except (AttributeError, OSError, ValueError) as exc:
        logger.warning("memreader serve: a worker runs unpinned (%s refused: %s)", list(cores), exc)
        return False
    os.environ[PINNED_ENV] = "1"
    return True
