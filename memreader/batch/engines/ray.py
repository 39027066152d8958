"""The Ray engine: inputs read by ``workers`` Ray actors, on a local Ray instance (``address``
unset) or on a cluster (``auto``, ``ray://host:port``, ``host:port``).

Each actor builds its :class:`~memreader.batch.worker.Worker` (reader, inputs, sink) once, from
the :class:`~memreader.batch.worker.WorkerSpec` the driver puts in the object store, and
serves whole inputs, one at a time: an input is the unit of work because its items are committed
together. The driver keeps at most :data:`IN_FLIGHT` inputs per actor (one running, one waiting
behind it, so an actor never idles on a round trip to the driver) and yields each result as soon
as it arrives, so results stream and memory does not grow with the number of inputs.

An actor whose process dies (killed for memory, a crash in native code, a lost node) costs the
input it was running, recorded as ``failed``; the inputs queued behind it go back to the queue and
a fresh actor takes its place. A worker that cannot be built (a bad reader config, a missing
model) stops the job with the worker's own exception, as the local engine does.

**Cancelling** (``cancel`` set): the queued calls are cancelled (``ray.cancel``) and the actors
killed, so the inputs they were running are abandoned: not published, no result (a sync actor's
running call cannot be interrupted, and waiting for it could take a whole input).

On a cluster the workers read the inputs and write the output themselves, so both must be
reachable from every node (S3, or a shared file system), and memreader (with the plugins the
reader config names) must be installed there. The reader config is not: the driver read and
validated it, and it travels in the workers' spec. Ray is imported only when this engine runs.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memreader.batch.places.base import InputRef
from memreader.batch.results import CancelFlag, InputResult
from memreader.errors import ConfigError, MemReaderError

if TYPE_CHECKING:
    from memreader.batch.job import EngineSpec
    from memreader.batch.worker import Worker, WorkerSpec

__all__ = ["IN_FLIGHT", "LOCAL_OBJECT_STORE", "run_ray"]

logger = logging.getLogger(__name__)

#: Inputs handed to one actor at a time: the one it runs and one waiting behind it.
IN_FLIGHT = 2
#: The object store of a local instance. Results are small and travel inline; the store only
#: holds the workers' spec, so Ray's default (30% of memory) would reserve memory for nothing.
LOCAL_OBJECT_STORE = 80 * 1024**2
#: Seconds a finished job waits for its actors to close their clients before killing them.
CLOSE_TIMEOUT_S = 30.0
#: Seconds between two looks at the cancel flag while waiting for results.
POLL_S = 0.1

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _import_ray() -> Any:
    """The ``ray`` module (an optional dependency; typed ``Any``: its stubs are partial)."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ConfigError(
            "engine: ray needs the ray package: pip install 'memreader-ai[ray]'"
        ) from exc


class _RayWorker:
    """The body of one Ray actor: a :class:`Worker` built once, serving inputs in order (an actor
    runs one call at a time).

    Building never raises here: the failure is kept and handed back by :meth:`ready`, so the
    driver re-raises the worker's own exception (a ``ConfigError`` stays one) instead of Ray's
    ``ActorDiedError`` with the traceback flattened into its message.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        self.worker: Worker | None = None
        self.error: Exception | None = None
        try:
            self.worker = spec.build()
        except Exception as exc:  # handed back by ready()
            self.error = exc

    def ready(self) -> Exception | None:
        """None once the worker is built, else why it could not be."""
        return self.error

    def process(self, ref: InputRef, digest: str) -> InputResult:
        """One input, read and committed (see :meth:`Worker.process`)."""
        if self.worker is None:  # pragma: no cover - the driver feeds only ready actors
            raise MemReaderError("the Ray worker was not built")
        return self.worker.process(ref, digest)

    def close(self) -> None:
        """Close the worker's reader clients, inputs and sink."""
        if self.worker is not None:
            self.worker.close()


@dataclass(eq=False)
class _Slot:
    """One actor and its calls: ``ready`` (pending until its worker is built) and the inputs it
    was given, in the order it runs them."""

    actor: Any
    ready: Any = None
    calls: deque[tuple[Any, InputRef, str]] = field(default_factory=deque)


def _failed(ref: InputRef, digest: str, reason: str, exc: BaseException) -> InputResult:
    """The result of an input that its worker did not finish (same shape as the runner's)."""
    message = _ANSI.sub("", str(exc)).strip()[:500]
    result = InputResult(ref.key, digest, status="failed", error=f"{reason}: {message}"[:500])
    result.errors.append(
        {"input": ref.key, "scene": None, "window": None, "reason": reason, "message": message}
    )
    result.counts["failures"] += 1
    return result


class _Pool:
    """The actors of one run and the inputs not yet handed out (see the module docstring)."""

    def __init__(
        self, ray: Any, workers: int, spec: WorkerSpec, todo: Sequence[tuple[InputRef, str]]
    ) -> None:
        self.ray = ray
        self.queue: deque[tuple[InputRef, str]] = deque(todo)
        self.left = len(todo)  # inputs whose result is not yielded yet
        # Each death costs an input, so at most one replacement per input is ever needed.
        self.replacements = len(todo)
        self.slots: list[_Slot] = []
        self.owner: dict[Any, _Slot] = {}  # pending call -> its actor's slot
        self.actor_class = ray.remote(num_cpus=1)(_RayWorker)
        self.spec = ray.put(spec)  # sent once, shared by every actor
        for _ in range(min(workers, len(todo))):
            self._start()

    def _start(self) -> None:
        slot = _Slot(self.actor_class.remote(self.spec))
        slot.ready = slot.actor.ready.remote()
        self.owner[slot.ready] = slot
        self.slots.append(slot)

    def _feed(self, slot: _Slot) -> None:
        while self.queue and len(slot.calls) < IN_FLIGHT:
            ref, digest = self.queue.popleft()
            call = slot.actor.process.remote(ref, digest)
            slot.calls.append((call, ref, digest))
            self.owner[call] = slot

    def _feed_all(self) -> None:
        for slot in self.slots:
            if slot.ready is None:
                self._feed(slot)

    def cancel(self) -> None:
        """Cancel every call not finished (queued ones never run); :meth:`close` kills the
        actors, which ends the running ones."""
        self.queue.clear()
        for slot in self.slots:
            for call, _, _ in slot.calls:
                try:
                    self.ray.cancel(call)
                except Exception as exc:  # finished or gone meanwhile: nothing left to stop
                    logger.debug("could not cancel a Ray call: %s", exc)

    def results(self, cancel: CancelFlag | None = None) -> Iterator[InputResult]:
        """Every input's result, in order of completion, until ``cancel`` is set."""
        ray = self.ray
        errors = ray.exceptions
        while self.left:
            if cancel is not None and cancel.is_set():
                self.cancel()
                return
            if not self.owner:
                raise MemReaderError(
                    f"engine: every Ray worker died; {self.left} input(s) were not read"
                )
            done, _ = ray.wait(list(self.owner), num_returns=1, timeout=POLL_S)
            if not done:
                continue
            call = done[0]
            slot = self.owner.pop(call)
            if slot.ready is not None and call == slot.ready:
                slot.ready = None
                try:
                    error = ray.get(call)
                except errors.RayActorError as exc:
                    logger.warning("a Ray worker died while starting: %s", exc)
                    self._bury(slot)
                    continue
                except errors.RayError as exc:
                    raise MemReaderError(f"engine: a Ray worker could not start: {exc}") from exc
                if error is not None:
                    raise error
                self._feed(slot)
                continue
            index = next(i for i, (c, _, _) in enumerate(slot.calls) if c == call)
            _, ref, digest = slot.calls[index]
            try:
                result = ray.get(call)
            except errors.RayActorError:  # _lost settles every call of the dead actor in order
                yield from self._lost(slot)
                continue
            except errors.RayError as exc:  # the call failed but the actor lives
                result = _failed(ref, digest, "EngineError", exc)
            del slot.calls[index]
            self.left -= 1
            self._feed(slot)  # before yielding: the actor works while the caller records
            yield result

    def _lost(self, slot: _Slot) -> list[InputResult]:
        """An actor died: what it finished is kept, the input it was running fails, the ones
        queued behind it go back to the queue, and a fresh actor takes its place."""
        self._bury(slot)
        results: list[InputResult] = []
        blamed = False
        back: list[tuple[InputRef, str]] = []
        for call, ref, digest in slot.calls:
            self.owner.pop(call, None)
            if blamed:  # queued behind the fatal input: never ran
                back.append((ref, digest))
                continue
            try:
                results.append(self.ray.get(call, timeout=CLOSE_TIMEOUT_S))
            except Exception as exc:  # the first call that did not finish is what it ran
                blamed = True
                results.append(_failed(ref, digest, "WorkerDied", exc))
                logger.warning("a Ray worker died reading %s: %s", ref.key, exc)
        slot.calls.clear()
        self.queue.extendleft(reversed(back))
        self.left -= len(results)
        if self.replacements and self.left:
            self.replacements -= 1
            self._start()
        self._feed_all()
        return results

    def _bury(self, slot: _Slot) -> None:
        """Forget ``slot``'s actor (its calls stay for :meth:`_lost`) and make sure it is gone."""
        self.slots.remove(slot)
        if slot.ready is not None:
            self.owner.pop(slot.ready, None)
        self._kill(slot)

    def _kill(self, slot: _Slot) -> None:
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception as exc:  # already gone, or the cluster is: nothing left to free
            logger.debug("could not kill a Ray worker: %s", exc)

    def close(self, graceful: bool) -> None:
        """Let idle actors close their clients and sink (``graceful``: the run finished), then
        kill every actor: a stopped run must not leave them reading."""
        ray = self.ray
        if graceful:
            closing = [s.actor.close.remote() for s in self.slots if s.ready is None]
            if closing:
                try:
                    ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_S)
                except Exception as exc:  # closing is best effort: the items are committed
                    logger.debug("Ray workers did not close cleanly: %s", exc)
        for slot in self.slots:
            self._kill(slot)
        self.slots.clear()
        self.owner.clear()


def _connect(ray: Any, engine: EngineSpec) -> bool:
    """Start a local Ray instance or join the job's cluster, unless the caller already did
    (then its settings stand). True when this call connected, so the run disconnects after."""
    if ray.is_initialized():
        return False
    address = engine.address
    if address is not None and address.startswith("ray://"):
        # Ray Client: the session's settings are the cluster's own.
        ray.init(address=address)
        return True
    options: dict[str, Any] = {
        "log_to_driver": False,  # input failures are in the results; worker chatter is noise
        "logging_level": logging.WARNING,
        "ignore_reinit_error": True,
    }
    if address is None:
        # A throwaway instance: no usage report sent home, no dashboard, a small object store.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        options.update(
            num_cpus=engine.workers,
            num_gpus=0,
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE,
        )
    ray.init(address=address, **options)
    return True


def run_ray(
    engine: EngineSpec,
    spec: WorkerSpec,
    todo: Sequence[tuple[InputRef, str]],
    *,
    cancel: CancelFlag | None = None,
) -> Iterator[InputResult]:
    """The results of ``todo`` read by ``engine.workers`` Ray actors (each a worker made from
    ``spec``), in order of completion.

    Ray is imported at once (a missing package is a ``ConfigError`` here, not mid-run); it is
    started, or the cluster joined, when the first result is asked for, and left again when the
    iterator finishes or is closed, unless the caller had connected it. Once ``cancel`` is set,
    the remaining calls are cancelled and the actors killed (see the module docstring).

    Raises:
        ConfigError: ray is not installed.
    """
    if not todo:
        return iter(())
    ray = _import_ray()
    return _run(ray, engine, spec, todo, cancel)


def _run(
    ray: Any,
    engine: EngineSpec,
    spec: WorkerSpec,
    todo: Sequence[tuple[InputRef, str]],
    cancel: CancelFlag | None,
) -> Iterator[InputResult]:
    connected = _connect(ray, engine)
    pool: _Pool | None = None
    finished = False
    try:
        pool = _Pool(ray, engine.workers, spec, todo)
        yield from pool.results(cancel)
        # Cancelled with inputs left: the actors are still running them; kill, do not wait.
        finished = pool.left == 0
    finally:
        try:
            if pool is not None:
                pool.close(graceful=finished)
        finally:
            if connected:
                ray.shutdown()
