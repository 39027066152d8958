"""``memreader serve --workers N``: N processes serving one listening socket, so the service
uses every core (one Python process runs its CPU-bound work on one core at a time).

The parent binds the socket, then forks the workers before it has built anything (no reader,
no threads): each worker builds its own app (reader, store, ONNX Runtime session) and runs the
guarded h11 server (:mod:`memreader.service.server`) on the inherited socket, so header and
body deadlines and connection limits hold in each (``max_connections`` and
``max_connections_per_client`` count per worker). The kernel hands each new connection to one
worker. Each worker runs on cores of its own when there are no more workers than cores
(``service.pin_workers``, :func:`memreader.cores.worker_cores`): a search's hops between its
threads stay on one core's cache. Per-key slots, ``Idempotency-Key`` answers and jobs live in
the shared state (:mod:`memreader.service.shared`): a retry or a poll may reach any worker.

A worker that dies is replaced (at most :data:`MAX_RESTARTS` times in a row without a minute
of calm, then the service stops). SIGINT or SIGTERM stops every worker gracefully (uvicorn's
shutdown: answers in flight end, jobs are cancelled). A supervisor killed outright (SIGKILL,
the OOM killer) takes its workers with it: each stops gracefully when its parent is gone
(:func:`die_with_parent`), never serving on as an orphan.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from types import FrameType

from memreader.cores import PROCESSES_ENV, pin_to, placements
from memreader.errors import ConfigError
from memreader.service.accept_share import ConnectionShares, SharedListener
from memreader.service.config import ServiceConfig
from memreader.service.shared import STATE_ENV

__all__ = [
    "die_with_parent",
    "run_worker",
    "serve_workers",
]

logger = logging.getLogger(__name__)

MAX_RESTARTS = 5
#: Seconds between two looks of a worker at its supervisor (where the kernel cannot tell it).
PARENT_CHECK_S = 1.0
_PR_SET_PDEATHSIG = 1


def serve_workers(
    config: ServiceConfig, *, host: str, port: int, log_level: str, workers: int
) -> None:
    """Serve ``config`` with ``workers`` processes until interrupted (see the module
    docstring); one worker serves in this process.

    Raises:
        ConfigError: the address cannot be bound, or workers keep dying.
    """
    from memreader.service import create_app
    from memreader.service.server import serve

    if workers <= 1:
        serve(create_app(config), config.settings, host=host, port=port, log_level=log_level)
        return
    if not hasattr(os, "fork"):
        raise ConfigError("--workers above 1 needs os.fork (Linux, macOS); run one per port")
    sock = _bind(host, port)
    saved = {name: os.environ.get(name) for name in (PROCESSES_ENV, STATE_ENV)}
    os.environ[PROCESSES_ENV] = str(workers)  # the workers inherit it: each takes its share
    folder = None
    if config.state_url == "memory":
        # No store to share through: the workers share a state file of their own.
        folder = tempfile.mkdtemp(prefix="memreader-serve-")
        os.environ[STATE_ENV] = f"sqlite:///{folder}/service-state"
    try:
        _supervise(config, sock, host=host, port=port, log_level=log_level, workers=workers)
    finally:
        sock.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP by name: asyncio sets TCP_NODELAY only on sockets that say so, and the
    # accepted connections inherit it (without it, keep-alive answers wait on delayed ACKs).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _supervise(
    config: ServiceConfig,
    sock: socket.socket,
    *,
    host: str,
    port: int,
    log_level: str,
    workers: int,
) -> None:
    """Fork the workers, replace one that dies, stop them all on SIGINT/SIGTERM."""
    stopping = False
    children: dict[int, int] = {}  # pid: its place among the workers
    shares = ConnectionShares(workers)
    pins = placements(workers, config.settings.pin_workers)
    if pins[0] is not None:
        logger.info("memreader serve: each worker on its own cores: %s", pins)

    def stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def start(index: int) -> None:
        place = (shares, index, pins[index])
        children[_fork(config, sock, host, port, log_level, place)] = index

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for index in range(workers):
            start(index)
        restarts, calm_since = 0, time.monotonic()
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            index = children.pop(pid, -1)
            if stopping or index < 0:
                continue
            code = os.waitstatus_to_exitcode(status)
            logger.error("memreader serve: worker %d ended (%d); starting another", pid, code)
            restarts = 0 if time.monotonic() - calm_since > 60 else restarts + 1
            calm_since = time.monotonic()
            if restarts >= MAX_RESTARTS:
                stop(signal.SIGTERM, None)
                raise ConfigError(
                    f"memreader serve: workers died {MAX_RESTARTS} times within a minute; "
                    "stopping (see the log above)"
                )
            start(index)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _fork(
    config: ServiceConfig,
    sock: socket.socket,
    host: str,
    port: int,
    level: str,
    place: tuple[ConnectionShares, int, list[int] | None],
) -> int:
    shares, index, cores = place
    shares.publish(index, 0)  # a new worker (or one replacing a dead one) holds none yet
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        die_with_parent(parent)
        if cores is not None:
            pin_to(cores)  # before any thread starts: every thread of the worker inherits it
        run_worker(config, sock, host=host, port=port, log_level=level, shares=shares, index=index)
        code = 0
    except BaseException:  # the worker must never return into the parent's code
        logger.exception("memreader serve: worker %d failed", os.getpid())
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def die_with_parent(parent: int) -> None:
    """Make this worker stop (SIGTERM: uvicorn's graceful shutdown) when its supervisor
    ``parent`` is gone, even killed with SIGKILL (no handler of its own runs then): an
    orphan would go on serving the socket, and nothing would stop or replace it. On Linux
    the kernel sends the signal (``PR_SET_PDEATHSIG``); elsewhere a daemon thread looks at
    the parent every :data:`PARENT_CHECK_S` seconds."""
    if _parent_death_signal(signal.SIGTERM):
        if os.getppid() != parent:  # it died before the signal was asked for
            os.kill(os.getpid(), signal.SIGTERM)
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        logger.error("memreader serve: the supervisor %d is gone; this worker stops", parent)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="memreader-parent-watch", daemon=True).start()


def _parent_death_signal(sig: int) -> bool:
    """Ask the kernel for ``sig`` when the parent dies (Linux); whether it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def run_worker(
    config: ServiceConfig,
    sock: socket.socket,
    *,
    host: str,
    port: int,
    log_level: str,
    shares: ConnectionShares | None = None,
    index: int = 0,
) -> None:
    """One worker: its own app on the shared socket, on the guarded h11 server (its own
    connection guard), until uvicorn's shutdown. ``shares``: every worker's open connections,
    this one's at ``index`` (:mod:`memreader.service.accept_share`)."""
    import uvicorn

    from memreader.service import create_app
    from memreader.service.server import (
        GuardedH11Protocol,
        set_serving_switch_interval,
        uvicorn_config,
    )

    set_serving_switch_interval()
    app = create_app(config)
    server_config = uvicorn_config(app, config.settings, host=host, port=port, log_level=log_level)
    # uvicorn's backlog is also how many connections asyncio accepts per wake-up: one, so that
    # the workers share a burst of new connections (memreader.service.accept_share).
    server_config.backlog = 1
    listener: socket.socket | None = sock
    if isinstance(sock, socket.socket):
        protocol = server_config.http
        if shares is not None and isinstance(protocol, type):
            assert issubclass(protocol, GuardedH11Protocol)  # uvicorn_config's protocol
            protocol.guard.watch = functools.partial(shares.publish, index)
        listener = SharedListener(fileno=sock.detach(), shares=shares, index=index)
    uvicorn.Server(server_config).run(sockets=[listener])
