"""Which network addresses a download may reach, checked where it matters: at connect time.

Why a network backend
---------------------
A check of the URL's host before the request is not enough against SSRF: the name may resolve
to a private address, resolve differently a moment later (DNS rebinding), or a redirect may
lead elsewhere. So :class:`GuardedBackend` is an httpcore network backend (the same public seam
as :class:`~memreader.transport.deadline.DeadlineBackend`) whose ``connect_tcp`` resolves the
host itself, refuses the connection if any address is not allowed, connects to one of the
checked addresses (pinning: the socket goes to an address that was checked, never to a second
resolution), and checks the peer address of the connected socket once more. httpcore passes
the URL's host name to ``start_tls`` separately, so TLS still verifies the certificate against
the name, not the IP connected to.

What is refused (:class:`AddressPolicy`): addresses that are not globally reachable (private,
loopback, link-local, shared, reserved, unspecified, documentation ranges), multicast
addresses, and IPv6 addresses embedding such an IPv4 address (IPv4-mapped, IPv4-compatible,
SIIT, NAT64, 6to4; Teredo and NAT64 local use whole), by explicit tables
(:mod:`memreader.transport.addresses`); and the names ``localhost`` (and its subdomains) and
the cloud metadata names, before any lookup. ``allow_hosts`` lets a host name, an address or a
network through anyway.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memreader.errors import BlockedAddressError
from memreader.transport.addresses import IPAddress, embedded_ipv4, is_public
from memreader.transport.deadline import time_left

__all__ = ["AddressPolicy", "GuardedBackend", "Resolver", "system_resolve"]

logger = logging.getLogger(__name__)

#: ``resolve(host, port)``: the IP addresses (as text) to try for ``host``, in order.
Resolver = Callable[[str, int], Sequence[str]]

#: Names that mean this machine or a cloud metadata service whatever DNS says.
_BLOCKED_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localhost6",
        "localhost6.localdomain6",
        "ip6-localhost",
        "ip6-loopback",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)


def system_resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to for a TCP connection (the system resolver)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_ip(text: str) -> IPAddress | None:
    """``text`` as an IP address (brackets and an IPv6 zone allowed), or ``None``."""
    text = text.strip("[]")
    try:
        return ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None


class AddressPolicy:
    """Refuses non-public addresses and local names unless ``allow_hosts`` lists them.

    Args:
        allow_hosts: host names (matched exactly, case-insensitively), IP addresses or CIDR
            networks that may be reached although they are not public. A listed name lets
            through every address it resolves to: the operator vouched for the name.
    """

    def __init__(self, allow_hosts: Iterable[str] = ()) -> None:
        names: set[str] = set()
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allow_hosts:
            entry = entry.strip().lower().rstrip(".")
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry)
        self._names = frozenset(names)
        self._networks = tuple(networks)

    def name_allowed(self, host: str) -> bool:
        """Whether ``host`` (a name) is listed in ``allow_hosts``."""
        return _norm(host) in self._names

    def address_allowed(self, ip: IPAddress) -> bool:
        """Whether ``ip`` may be reached: public, or in an allowed network."""
        if any(ip.version == net.version and ip in net for net in self._networks):
            return True
        embedded = embedded_ipv4(ip)
        if embedded is not None and any(embedded in net for net in self._networks):
            return True
        return is_public(ip)

    def check_host(self, host: str, label: str) -> None:
        """Refuse ``host`` before any lookup: a non-public IP literal or a local name.

        Raises:
            BlockedAddressError: naming ``label`` (the URL's safe label), never the URL.
        """
        name = _norm(host)
        if self.name_allowed(name):
            return
        ip = parse_ip(name)
        if ip is not None:
            if not self.address_allowed(ip):
                raise BlockedAddressError(f"{label}: address {ip} is not public")
            return
        if name in _BLOCKED_NAMES or name.endswith(".localhost") or not name:
            raise BlockedAddressError(f"{label}: host {name!r} is a local or metadata name")

    def check_resolved(self, host: str, addresses: Sequence[str], label: str) -> list[IPAddress]:
        """The addresses of ``host`` as IPs, once every one of them is allowed.

        Raises:
            BlockedAddressError: one address is not public (a name with one private address
                among public ones is refused whole: which one is used is not ours to pick).
        """
        ips: list[IPAddress] = []
        name_ok = self.name_allowed(host)
        for text in addresses:
            ip = parse_ip(text)
            if ip is None:
                raise BlockedAddressError(f"{label}: resolved to something not an IP address")
            if not name_ok and not self.address_allowed(ip):
                raise BlockedAddressError(f"{label}: {host!r} resolves to {ip}, not public")
            ips.append(ip)
        if not ips:
            raise BlockedAddressError(f"{label}: {host!r} resolves to no address")
        return ips


def _norm(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")


class GuardedBackend:
    """An httpcore network backend that connects only to addresses :class:`AddressPolicy` allows.

    Args:
        inner: the backend doing the I/O (httpcore's ``SyncBackend``).
        core: the httpcore module whose ``ConnectError``/``ConnectTimeout`` to raise.
        policy: what may be reached.
        resolve: the resolver (a seam for tests; default :func:`system_resolve`). It runs on a
            helper thread so a stuck lookup ends at the current deadline.

    Refusals raise :class:`~memreader.errors.BlockedAddressError`, which httpcore and
    memreader's transport pass through unchanged.
    """

    def __init__(
        self, inner: Any, core: Any, policy: AddressPolicy, resolve: Resolver | None = None
    ) -> None:
        self._inner = inner
        self._core = core
        self._policy = policy
        self._resolve = resolve or system_resolve

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Any:
        """Resolve ``host``, check every address, connect to a checked one, check the peer."""
        label = f"{host}:{port}"
        self._policy.check_host(host, label)
        literal = parse_ip(host)
        addresses = [str(literal)] if literal is not None else self._lookup(host, port, timeout)
        allowed = self._policy.check_resolved(host, addresses, label)
        name_ok = self._policy.name_allowed(host)
        last: Exception | None = None
        for ip in allowed:
            try:
                stream = self._inner.connect_tcp(
                    str(ip),
                    port,
                    timeout=_left(timeout),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (self._core.ConnectError, self._core.ConnectTimeout) as exc:
                last = exc
                continue
            self._check_peer(stream, host, name_ok, label)
            logger.debug("connected to %s at %s", label, ip)
            return stream
        assert last is not None  # allowed is never empty
        raise last

    def _lookup(self, host: str, port: int, timeout: float | None) -> Sequence[str]:
        """``resolve(host, port)`` within the connect timeout (getaddrinfo has none)."""
        wait = _left(timeout)
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = self._resolve(host, port)
            except (OSError, UnicodeError, ValueError) as exc:  # gaierror, a bad IDNA name
                outcome["error"] = exc

        thread = threading.Thread(target=run, name="memreader-resolve", daemon=True)
        thread.start()
        thread.join(wait)
        if thread.is_alive():
            raise self._core.ConnectTimeout(f"resolving {host!r} timed out")
        if "error" in outcome:
            raise self._core.ConnectError(f"cannot resolve {host!r}: {outcome['error']}")
        if "value" not in outcome:  # the resolver raised something else: a bug, say so
            raise self._core.ConnectError(f"cannot resolve {host!r}")
        value: Sequence[str] = outcome["value"]
        return value

    def _check_peer(self, stream: Any, host: str, name_ok: bool, label: str) -> None:
        """The connected socket's peer must be allowed too (what was connected, not planned)."""
        peer = stream.get_extra_info("server_addr")
        ip = parse_ip(str(peer[0])) if isinstance(peer, tuple) and peer else None
        if ip is None or (not name_ok and not self._policy.address_allowed(ip)):
            stream.close()
            raise BlockedAddressError(f"{label}: connected to {ip or 'an unknown peer'}, refused")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Any:
        """Refused: downloads go over TCP only."""
        raise BlockedAddressError("unix sockets are not reachable by downloads")

    def sleep(self, seconds: float) -> None:
        """Sleep (httpcore's connect retries)."""
        self._inner.sleep(seconds)


def _left(timeout: float | None) -> float | None:
    """``timeout`` shortened to the current deadline's time left (never negative)."""
    left = time_left()
    if left is None:
        return timeout
    left = max(0.0, left)
    return left if timeout is None else min(timeout, left)
