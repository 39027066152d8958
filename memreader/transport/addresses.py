"""Whether an IP address is public, judged by explicit tables rather than by trust in one
Python version's ``ipaddress.is_global``.

``is_global`` calls several IPv6 forms *global* that carry an IPv4 address inside them and
reach that IPv4 host through a translator or the kernel: IPv4-compatible ``::a.b.c.d``, SIIT
``::ffff:0:a.b.c.d``, NAT64 (``64:ff9b::/96`` and the RFC 8215 local-use ``64:ff9b:1::/48``).
Its tables also change between Python releases. So this module:

* denies the special-purpose ranges of the IANA registries explicitly (:data:`DENIED_V4`,
  :data:`DENIED_V6`), whatever ``is_global`` says, and also asks ``is_global``;
* extracts the IPv4 address embedded in an IPv6 address (:func:`embedded_ipv4`) and judges
  it as well: an IPv6 address is public only if its embedded IPv4 address is public too.

Forms that embed an IPv4 address (:func:`embedded_ipv4`): IPv4-mapped ``::ffff:0:0/96``,
IPv4-compatible ``::/96``, SIIT ``::ffff:0:0:0/96``, NAT64 ``64:ff9b::/96`` (RFC 6052) and
``64:ff9b:1::/48`` (RFC 8215: the last 32 bits, the ``/96`` layout; the whole ``/48`` is local
use and denied anyway), 6to4 ``2002::/16`` (bits 16-48), Teredo ``2001::/32`` (the server
address; the whole ``/32`` is denied: the client address behind it is anyone's NAT).
"""

from __future__ import annotations

import ipaddress

__all__ = ["DENIED_V4", "DENIED_V6", "IPAddress", "embedded_ipv4", "is_public"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: IPv4 ranges never reached by a download (RFC 6890 and its updates; multicast; reserved).
DENIED_V4: tuple[ipaddress.IPv4Network, ...] = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # this network
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata lives here)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.31.196.0/24",  # AS112
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
        "192.168.0.0/16",  # private
        "192.175.48.0/24",  # AS112 direct delegation
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)

#: IPv6 ranges never reached by a download, whatever they embed.
DENIED_V6: tuple[ipaddress.IPv6Network, ...] = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::/128",  # unspecified
        "::1/128",  # loopback
        "64:ff9b:1::/48",  # NAT64 local use (RFC 8215): a translator inside some network
        "100::/64",  # discard only
        "2001::/32",  # Teredo: the client address behind it is not ours to judge
        "2001:2::/48",  # benchmarking
        "2001:10::/28",  # ORCHID (deprecated)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
        "5f00::/16",  # SRv6 SIDs (RFC 9602)
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_LOW32 = 0xFFFFFFFF


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (see the module notes), or ``None``."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    value = int(ip)
    if ip in _MAPPED or ip in _COMPATIBLE or ip in _SIIT or ip in _NAT64 or ip in _NAT64_LOCAL:
        return ipaddress.IPv4Address(value & _LOW32)
    if ip in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((value >> 80) & _LOW32)
    if ip in _TEREDO:
        return ipaddress.IPv4Address((value >> 64) & _LOW32)  # the Teredo server
    return None


def is_public(ip: IPAddress) -> bool:
    """Whether ``ip`` is globally reachable: in no denied range, global by ``ipaddress``, not
    multicast, and carrying (if any) an embedded IPv4 address that is public too."""
    if isinstance(ip, ipaddress.IPv4Address):
        if any(ip in net for net in DENIED_V4):
            return False
    elif any(ip in net for net in DENIED_V6):
        return False
    if ip.is_multicast or not ip.is_global:
        return False
    embedded = embedded_ipv4(ip)
    return embedded is None or is_public(embedded)
