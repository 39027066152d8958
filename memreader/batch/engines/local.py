"""The local engine: inputs in this process (``workers: 1``) or in ``workers`` processes, each
building its reader once. Inputs are handed out a few at a time, so results stream back as they
finish and memory does not grow with the number of inputs.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from memreader.batch.job import JobConfig
from memreader.batch.runner import InputResult, Worker
from memreader.batch.sources import InputRef

__all__ = ["run_local"]

_WORKER: Worker | None = None


def _start(job: JobConfig, refine: bool) -> None:
    global _WORKER
    _WORKER = Worker(job, refine=refine)


def _process(ref: InputRef, digest: str) -> InputResult:
    assert _WORKER is not None, "the worker process was not initialised"
    return _WORKER.process(ref, digest)


def run_local(
    job: JobConfig, todo: Sequence[tuple[InputRef, str]], *, refine: bool = False
) -> Iterator[InputResult]:
    """The results of ``todo``, in order of completion."""
    if not todo:
        return
    if job.engine.workers == 1:
        worker = Worker(job, refine=refine)
        try:
            for ref, digest in todo:
                yield worker.process(ref, digest)
        finally:
            worker.close()
        return
    # spawn, not fork: the parent may hold threads (tokenizers, ONNX Runtime, HTTP pools), and a
    # forked copy of a lock held by another thread never unlocks.
    context = multiprocessing.get_context("spawn")
    workers = min(job.engine.workers, len(todo))
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start, initargs=(job, refine)
    ) as pool:
        pending: set[Future[InputResult]] = set()
        queue = iter(todo)
        for ref, digest in queue:
            pending.add(pool.submit(_process, ref, digest))
            if len(pending) >= 2 * workers:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                for ref, digest in queue:
                    pending.add(pool.submit(_process, ref, digest))
                    break
