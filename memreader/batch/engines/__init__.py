"""Where a job's inputs run: :mod:`~memreader.batch.engines.local` (this process, or worker
processes) and :mod:`~memreader.batch.engines.ray` (Ray tasks, a local instance or a cluster).

An engine takes its spec (:class:`~memreader.batch.job.EngineSpec`: which engine, how many
workers, where), a way to make a worker (:class:`~memreader.batch.worker.WorkerSpec`, sent to
each worker, which builds its reader, inputs and sink once) and the inputs to read (each with
its content digest), and yields one :class:`~memreader.batch.results.InputResult` per input as
it finishes, in any order. Given a ``cancel`` flag, an engine starts no input
once it is set and stops promptly; the inputs it did not finish yield no result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from memreader.batch.places.base import InputRef
from memreader.batch.results import CancelFlag, InputResult

if TYPE_CHECKING:
    from memreader.batch.job import EngineSpec
    from memreader.batch.worker import WorkerSpec

__all__ = ["run_engine"]

Todo = Sequence[tuple[InputRef, str]]


def run_engine(
    engine: EngineSpec, worker: WorkerSpec, todo: Todo, *, cancel: CancelFlag | None = None
) -> Iterator[InputResult]:
    """The results of ``todo`` on the ``engine``, read by workers ``worker`` makes (until
    ``cancel`` is set)."""
    if engine.kind == "ray":
        from memreader.batch.engines.ray import run_ray

        return run_ray(engine, worker, todo, cancel=cancel)
    from memreader.batch.engines.local import run_local

    return run_local(engine, worker, todo, cancel=cancel)
