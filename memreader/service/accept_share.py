"""How the workers of ``memreader serve --workers N`` share new connections on the one socket
the parent bound: each worker's open connections in memory every worker sees, and a listening
socket through which a worker holding more than the others leaves a new connection to them.

Left to the kernel and asyncio, the first worker woken by a burst of new connections accepted
all of them (asyncio accepts up to its backlog per wake-up), and a keep-alive client stays
where it landed: 32 clients opening at once all searched one worker while the other idled
(issue 31). Here a worker accepts one connection per wake-up, and one that holds more than
one connection above the worker holding fewest declines for a moment (at most
:data:`DECLINE_S`): the socket stays readable, and the other worker, woken too, takes it.

>>> shares = ConnectionShares(2)
>>> shares.publish(0, 5); shares.publish(1, 3)
>>> shares.fewest_but(0), shares.fewest_but(1)
(3, 5)
"""

from __future__ import annotations

import mmap
import socket
import time

__all__ = ["DECLINE_S", "ConnectionShares", "SharedListener"]

#: The longest a worker leaves new connections to the others (a worker that is busy, stopped
#: or dead never takes them: then it accepts them itself).
DECLINE_S = 0.02


class ConnectionShares:
    """Each worker's count of open connections, in memory the parent maps before it forks
    (the workers inherit it: every worker writes its own count and reads the others')."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._memory = mmap.mmap(-1, 8 * workers)
        self._counts = memoryview(self._memory).cast("q")

    def publish(self, index: int, count: int) -> None:
        """Worker ``index`` holds ``count`` open connections now."""
        self._counts[index] = count

    def count(self, index: int) -> int:
        """Worker ``index``'s open connections, as it last said."""
        return int(self._counts[index])

    def fewest_but(self, index: int) -> int | None:
        """The fewest open connections of a worker other than ``index`` (``None``: alone)."""
        others = [self._counts[i] for i in range(self.workers) if i != index]
        return min(others) if others else None


class SharedListener(socket.socket):
    """The listening socket the parent bound, as one worker's event loop serves it (see the
    module docstring). ``listen`` keeps the parent's backlog: asyncio calls it with uvicorn's,
    which here is one, the connections accepted per wake-up."""

    def __init__(
        self, *, fileno: int, shares: ConnectionShares | None = None, index: int = 0
    ) -> None:
        super().__init__(fileno=fileno)
        self.shares, self.index = shares, index
        self._declining_since: float | None = None

    def listen(self, backlog: int = 0, /) -> None:
        """Leave the kernel's queue of pending connections as the parent set it."""

    def accept(self) -> tuple[socket.socket, object]:
        """The next connection, unless this worker holds more than its share and has left it
        to the others for less than :data:`DECLINE_S` (then ``BlockingIOError``, which
        asyncio reads as "none pending").

        Raises:
            BlockingIOError: none pending, or left to another worker.
        """
        shares = self.shares
        if shares is not None:
            fewest = shares.fewest_but(self.index)
            if fewest is not None and shares.count(self.index) > fewest + 1:
                now = time.monotonic()
                if self._declining_since is None:
                    self._declining_since = now
                if now - self._declining_since < DECLINE_S:
                    raise BlockingIOError("left to a worker holding fewer connections")
        self._declining_since = None
        return super().accept()
