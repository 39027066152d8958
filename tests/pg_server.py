"""A real PostgreSQL server (with pgvector) for the tests, from the ``pgserver`` package: it
ships the binaries, so nothing needs installing. The server listens on a unix socket in a
fresh temporary folder only (no TCP port), and every wait (start, stop) has a deadline.

Use: ``with running_server() as admin_url: url = create_database(admin_url, "t1")``
(``admin_url`` is ``postgresql://postgres:@/postgres?host=/tmp/...``).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Seconds the server gets to start (it takes about one here), and to stop.
START_DEADLINE = 90.0
STOP_DEADLINE = 30.0


def _within(deadline: float, what: str, work: Callable[[], Any]) -> Any:
    """Run ``work`` in a thread and wait at most ``deadline`` seconds for it."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"pgserver {what}", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        raise TimeoutError(f"PostgreSQL did not {what} within {deadline:.0f}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@contextmanager
def running_server() -> Iterator[str]:
    """Start a throwaway server; yield the URL of its ``postgres`` database; stop it and
    delete its data at the end."""

    folder = tempfile.mkdtemp(prefix="mrpg-")  # short: a unix socket path has ~100 bytes
    try:
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set"
            warnings.simplefilter("ignore")
            # imported here: only the PostgreSQL tests need it (and it warns on import)
            from pgserver.postgres_server import get_server

            server = _within(
                START_DEADLINE, "start", lambda: get_server(folder, cleanup_mode="stop")
            )
        try:
            url = str(server.get_uri())
            _for_tests(url)
            yield url
        finally:
            _within(STOP_DEADLINE, "stop", lambda: _stop(server))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stop(server: Any) -> None:
    """Stop ``server`` in PostgreSQL's immediate mode (a throwaway server has nothing to
    checkpoint), then release pgserver's handle. Its data (a database per test: gigabytes by
    the end of a run) is deleted afterwards by :func:`running_server`, outside the stop's
    deadline: deleting it inside took over 30 s on a loaded 2-core machine (a red CI run)."""
    import subprocess

    from pgserver._commands import pg_ctl

    try:
        pg_ctl(
            ["-w", "-t", "20", "-m", "immediate", "stop"],
            pgdata=server.pgdata,
            user=server.system_user,
            timeout=25,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        # pgserver's cleanup then stops (or kills) it the way it knows; say why it had to
        warnings.warn(f"immediate stop of the test PostgreSQL failed: {exc}", stacklevel=1)
    server.cleanup()


def _for_tests(url: str) -> None:
    """Trade durability for speed: a crash loses a throwaway server, and without fsync a
    database is created, and the server stopped, in milliseconds instead of seconds."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` pointing at database ``name`` instead."""
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path="/" + name))


def create_database(admin_url: str, name: str) -> str:
    """Create the empty database ``name`` (dropping an old one); return its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_url(admin_url, name)
