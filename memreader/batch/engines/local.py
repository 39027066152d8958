"""The local engine: inputs in this process (``workers: 1``) or in ``workers`` processes, each
building its reader once and reading one input at a time. Inputs are handed out one per worker,
so results stream back as they finish and memory does not grow with the number of inputs.

A worker process that dies (killed for memory, SIGKILL, a crash in native code) costs only the
input it was reading, recorded as ``failed`` (``WorkerDied``, with the signal or exit status);
a fresh process takes its place, as on the Ray engine. A worker that cannot be built (a bad
reader config, a missing model) stops the job with the worker's own exception.

**Cancelling** (``cancel`` set): no input is handed out any more. In this process the input
being read stops before its next batch, unpublished. Worker processes are told through a shared
event and stop the same way; the driver waits at most :data:`CANCEL_GRACE_S` for them (an input
finished meanwhile is yielded and recorded), then kills those still busy (their input is
abandoned: not published, no result).
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import signal
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from typing import TYPE_CHECKING

from memreader.batch.places.base import InputRef
from memreader.batch.results import CancelFlag, InputCancelled, InputResult
from memreader.errors import MemReaderError

if TYPE_CHECKING:
    from memreader.batch.job import EngineSpec
    from memreader.batch.worker import WorkerSpec

__all__ = ["run_local"]

logger = logging.getLogger(__name__)

#: Seconds a finished job waits for its worker processes to close their clients and exit.
CLOSE_TIMEOUT_S = 30.0
#: Seconds a cancelled job waits for busy worker processes to stop at a batch boundary before
#: killing them.
CANCEL_GRACE_S = 5.0
#: Seconds between two looks at the cancel flag while waiting for worker processes.
POLL_S = 0.1

_Task = tuple[InputRef, str]


def _serve(conn: Connection, spec: WorkerSpec, stop: Event, level: int) -> None:
    """The body of a worker process: build the worker, say so (or why not), then read each
    input sent until ``None`` comes; an input cut short by ``stop`` is answered ``cancelled``.
    ``level``: the driver's level for memreader's loggers (``--quiet``: errors only)."""
    # Ctrl-C reaches the whole process group: the driver decides what stops, and when.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("memreader").setLevel(level)
    try:
        worker = spec.build()
    except Exception as exc:  # handed back: the driver raises it as the job's error
        _send_error(conn, exc)
        return
    try:
        conn.send(("ready", None))
        while (task := conn.recv()) is not None:
            ref, digest = task
            try:
                conn.send(("result", worker.process(ref, digest, stop)))
            except InputCancelled as cut:
                conn.send(("cancelled", cut.result))
    except (EOFError, OSError) as exc:  # the driver went away: nothing left to report to
        logger.debug("the driver of this worker went away: %r", exc)
    finally:
        worker.close()


def _send_error(conn: Connection, exc: Exception) -> None:
    """Send ``exc`` if it comes back whole from pickling (the driver re-raises it as it is),
    else its words as a :class:`MemReaderError`."""
    error: Exception = exc
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception as why:  # any exception's own pickling may fail: keep its words, and why
        error = MemReaderError(f"{type(exc).__name__}: {exc} (not picklable: {why!r:.200})")
    conn.send(("error", error))


@dataclass(eq=False)
class _Proc:
    """One worker process, its end of the pipe, and the input it is reading (if any)."""

    process: BaseProcess
    conn: Connection
    ready: bool = False
    task: _Task | None = None


def _death(process: BaseProcess) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class _Pool:
    """The worker processes of one run and the inputs not yet handed out."""

    def __init__(self, workers: int, spec: WorkerSpec) -> None:
        # spawn, not fork: the parent may hold threads (tokenizers, ONNX Runtime, HTTP pools),
        # and a forked copy of a lock held by another thread never unlocks.
        self.context = multiprocessing.get_context("spawn")
        self.workers = workers
        self.spec = spec
        self.queue: deque[_Task] = deque()
        self.left = 0  # inputs whose result is not yielded yet
        self.replacements = 0
        self.procs: list[_Proc] = []
        self.stop = self.context.Event()  # seen by every worker process: stop at a batch
        # A spawned process starts without the driver's logging settings: it gets its level.
        self.log_level = logging.getLogger("memreader").getEffectiveLevel()
        self.stopping = False

    def start(self, todo: Sequence[_Task]) -> None:
        """Queue ``todo`` and start ``workers`` processes (fewer for fewer inputs)."""
        self.queue.extend(todo)
        self.left = len(todo)
        # Each death costs an input, so at most one replacement per input is ever needed.
        self.replacements = len(todo)
        for _ in range(min(self.workers, len(todo))):
            self._start()

    def _start(self) -> None:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(
            target=_serve,
            args=(theirs, self.spec, self.stop, self.log_level),
            daemon=True,
        )
        process.start()
        theirs.close()  # only the child holds it now: its death makes our end readable (EOF)
        self.procs.append(_Proc(process, ours))

    def _feed(self, proc: _Proc) -> None:
        if proc.ready and proc.task is None and self.queue:
            task = self.queue.popleft()
            try:
                proc.conn.send(task)
            except OSError:  # it died meanwhile: the task goes back, its end of file comes next
                self.queue.appendleft(task)
                return
            proc.task = task

    def _cancel(self) -> None:
        """Hand out nothing more and tell busy workers to stop at their next batch."""
        self.stopping = True
        self.stop.set()
        self.left -= len(self.queue)
        self.queue.clear()

    def results(self, cancel: CancelFlag | None = None) -> Iterator[InputResult]:
        """Every input's result, in order of completion; once ``cancel`` is set, only those of
        the inputs that finish within :data:`CANCEL_GRACE_S`."""
        deadline = float("inf")
        while self.left:
            if not self.stopping and cancel is not None and cancel.is_set():
                self._cancel()
                deadline = time.monotonic() + CANCEL_GRACE_S
            if time.monotonic() >= deadline:
                return  # close() kills the workers still busy: their inputs are abandoned
            if not self.procs:
                raise MemReaderError(
                    f"engine: every local worker died; {self.left} input(s) were not read"
                )
            ready = set(wait([p.conn for p in self.procs], timeout=POLL_S))
            for proc in [p for p in self.procs if p.conn in ready]:
                try:
                    kind, value = proc.conn.recv()
                except (EOFError, OSError):
                    result = self._lost(proc)
                    if result is not None:
                        yield result
                    continue
                if kind == "error":
                    raise value
                if kind == "ready":
                    proc.ready = True
                    self._feed(proc)
                    continue
                if kind == "cancelled":  # stopped mid-input: no result, unless rows stay written
                    proc.task = None
                    self.left -= 1
                    if value is not None:
                        yield value
                    continue
                proc.task = None
                self.left -= 1
                self._feed(proc)  # before yielding: the worker reads while the caller records
                yield value

    def _lost(self, proc: _Proc) -> InputResult | None:
        """A worker process died: the input it was reading fails and a fresh process takes its
        place (one that dies while starting is not replaced: the next would too)."""
        proc.process.join(timeout=CLOSE_TIMEOUT_S)
        if proc.process.is_alive():  # pragma: no cover - it closed its end but lingers
            proc.process.kill()
            proc.process.join(timeout=CLOSE_TIMEOUT_S)
        how = _death(proc.process)
        self.procs.remove(proc)
        proc.conn.close()
        result = None
        if proc.task is not None:
            ref, digest = proc.task
            logger.warning("a local worker process %s while reading %s", how, ref.key)
            result = InputResult(ref.key, digest)
            result.fail("WorkerDied", f"the worker process reading this input {how}")
            self.left -= 1
        elif not proc.ready:
            logger.warning("a local worker process %s while starting", how)
            return None
        else:
            logger.warning("an idle local worker process %s", how)
        if self.replacements and self.queue:
            self.replacements -= 1
            self._start()
        return result

    def close(self, graceful: bool) -> None:
        """Let idle workers close their clients (``graceful``: the run finished or was
        cancelled), then make sure every process is gone: a stopped run must not leave them
        reading. After a cancel, workers still starting are not waited for."""
        told: list[_Proc] = []
        for proc in self.procs:
            if graceful and proc.task is None and (proc.ready or not self.stopping):
                try:
                    proc.conn.send(None)
                    told.append(proc)
                except OSError as exc:  # already gone
                    logger.debug("a local worker could not be told to stop: %s", exc)
        for proc in self.procs:
            if proc in told:
                proc.process.join(timeout=CLOSE_TIMEOUT_S)
            if proc.process.is_alive():
                proc.process.kill()
                proc.process.join(timeout=CLOSE_TIMEOUT_S)
            proc.conn.close()
        self.procs.clear()


def run_local(
    engine: EngineSpec,
    spec: WorkerSpec,
    todo: Sequence[_Task],
    *,
    cancel: CancelFlag | None = None,
) -> Iterator[InputResult]:
    """The results of ``todo`` read by ``engine.workers`` workers made from ``spec``, in order of
    completion; after ``cancel`` is set, no input starts and the inputs being read stop (see
    the module docstring)."""
    if not todo or (cancel is not None and cancel.is_set()):
        return
    if engine.workers == 1:
        worker = spec.build()
        try:
            for ref, digest in todo:
                if cancel is not None and cancel.is_set():
                    return
                try:
                    result = worker.process(ref, digest, cancel)
                except InputCancelled as cut:
                    if cut.result is not None:
                        yield cut.result
                    return
                yield result
        finally:
            worker.close()
        return
    pool = _Pool(engine.workers, spec)
    finished = False
    try:
        pool.start(todo)
        yield from pool.results(cancel)
        finished = True
    finally:
        pool.close(graceful=finished)
