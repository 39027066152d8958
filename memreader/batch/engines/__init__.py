"""Where a job's inputs run: :mod:`~memreader.batch.engines.local` (this process, or worker
processes) and :mod:`~memreader.batch.engines.ray` (Ray tasks, a local instance or a cluster).

An engine takes the job and the inputs to read (each with its content digest) and yields one
:class:`~memreader.batch.runner.InputResult` per input as it finishes, in any order. Each worker
builds its reader once from the job's config. Given a ``cancel`` flag, an engine starts no input
once it is set and stops promptly; the inputs it did not finish yield no result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from memreader.batch.inputs import InputRef
from memreader.batch.job import JobConfig
from memreader.batch.runner import CancelFlag, InputResult

__all__ = ["run_engine"]

Todo = Sequence[tuple[InputRef, str]]


def run_engine(
    job: JobConfig, todo: Todo, *, refine: bool = False, cancel: CancelFlag | None = None
) -> Iterator[InputResult]:
    """The results of ``todo`` on the job's engine (until ``cancel`` is set)."""
    if job.engine.kind == "ray":
        from memreader.batch.engines.ray import run_ray

        return run_ray(job, todo, refine=refine, cancel=cancel)
    from memreader.batch.engines.local import run_local

    return run_local(job, todo, refine=refine, cancel=cancel)
