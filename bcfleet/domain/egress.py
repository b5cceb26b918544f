"""Which network addresses an outbound request made on a tenant's behalf may reach; pure, for bcfleet/egress.py.

``refusal(address, allow)`` names the class of a refused address (``loopback``,
``private``, ``link-local``, …) or returns None when it may be reached. Every
address that is not plainly public is refused: loopback, private (RFC 1918,
fc00::/7), link-local (169.254/16 with the cloud metadata address, fe80::/10),
CGNAT 100.64/10, unspecified, multicast, reserved, documentation and benchmark
ranges. IPv6 forms that carry an IPv4 address (``::ffff:127.0.0.1``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``) are judged by that IPv4 address. An
operator's allowed range (``BCFLEET_EGRESS_ALLOW``) wins over every refusal.

``parse_host_literal`` reads a URL host the way the C resolver's ``inet_aton``
does, so ``2130706433``, ``0177.0.0.1`` and ``0x7f.1`` are the loopback address
they resolve to, not names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Most specific first: the first match names the refusal.
REFUSED: tuple[tuple[IPNetwork, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("100.64.0.0/10"), "cgnat"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "reserved"),
    (_V4("198.18.0.0/15"), "reserved"),
    (_V4("198.51.100.0/24"), "reserved"),
    (_V4("203.0.113.0/24"), "reserved"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "private"),
    (_V6("fc00::/7"), "private"),
    (_V6("ff00::/8"), "multicast"),
    (_V6("100::/64"), "reserved"),
    (_V6("2001:db8::/32"), "reserved"),
    (_V6("64:ff9b:1::/48"), "private"),
    (_V6("::/96"), "reserved"),  # the deprecated IPv4-compatible form
)

_NAT64 = _V6("64:ff9b::/96")
_SIXTOFOUR = _V6("2002::/16")
_NUMERIC_PART = re.compile(r"^(0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$")


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return None


def refusal(address: IPAddress, allow: Sequence[IPNetwork] = ()) -> str | None:
    """Why ``address`` may not be reached (a class name), or None when it may."""
    inner = embedded_ipv4(address)
    if _allowed(address, allow) or (inner is not None and _allowed(inner, allow)):
        return None
    return _classify(address if inner is None else inner)  # the carried IPv4 address decides


def _allowed(address: IPAddress, allow: Sequence[IPNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in allow)


def _classify(address: IPAddress) -> str | None:
    if address in METADATA_ADDRESSES:
        return "metadata"
    for network, reason in REFUSED:
        if address.version == network.version and address in network:
            return reason
    # Whatever else the standard library knows not to be global (future IANA entries).
    if address.is_multicast:
        return "multicast"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


def refused_any(addresses: Iterable[IPAddress], allow: Sequence[IPNetwork] = ()) -> str | None:
    """The first refusal among a host's addresses: one refused address refuses the host."""
    for address in addresses:
        reason = refusal(address, allow)
        if reason is not None:
            return reason
    return None


def parse_host_literal(host: str) -> IPAddress | None:
    """The address a URL host spells (IPv6 in brackets, inet_aton IPv4 forms), or None for a name."""
    text = host.strip().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return _inet_aton(text)


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """``a``, ``a.b``, ``a.b.c`` and ``a.b.c.d`` with decimal, octal (0…) or hex (0x…) parts."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_NUMERIC_PART.match(part) for part in parts):
        return None
    values = [_number(part) for part in parts]
    *head, last = values
    if any(value > 0xFF for value in head) or last >= 1 << (8 * (5 - len(values))):
        return None
    number = 0
    for value in head:
        number = (number << 8) | value
    number = (number << (8 * (5 - len(values)))) | last
    return ipaddress.IPv4Address(number)


def _number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        return int(part[1:], 8)
    return int(part)


def parse_ranges(raw: str | Iterable[str]) -> tuple[IPNetwork, ...]:
    """``"127.0.0.0/8,::1/128"`` (or a list of them) as networks; ValueError naming a bad one."""
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    networks: list[IPNetwork] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(f"{text!r} is not an address range such as 127.0.0.0/8") from None
    return tuple(networks)
