"""The egress guard: every outbound request made on a tenant's behalf goes through it (providers, webhooks).

A URL is checked twice. When it is registered, :meth:`EgressGuard.check_url`
refuses a non-http(s) scheme and a host whose addresses are refused (a host that
does not resolve yet passes: it is judged again at each request). At each
request, :meth:`EgressGuard.transport` gives an httpx transport whose network
backend resolves the host, refuses it when any of its addresses is refused, and
connects to exactly the addresses it checked: DNS answers that change between
the check and the connection cannot slip through, and neither can a redirect
(callers do not follow them anyway).

Which addresses are refused is decided by the pure bcfleet/domain/egress.py;
the operator's allowed ranges (``BCFLEET_EGRESS_ALLOW`` or ``egress_allow`` in
fleet.toml, FleetSettings.egress_allow) are the only exception. A refusal is
decided before any connection is made, so its message cannot tell an open port
from a closed one, and it names no address.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from bcfleet.domain.bounds import http_url
from bcfleet.domain.egress import IPAddress, IPNetwork, parse_host_literal, refused_any
from bcfleet.errors import InvalidInputError

Resolver = Callable[[str, int], list[str]]

REFUSED_MESSAGE = (
    "the destination is not an allowed address (loopback, private, link-local and "
    "metadata addresses are refused unless the operator allows them in BCFLEET_EGRESS_ALLOW)"
)


class EgressRefused(InvalidInputError):
    """A destination the guard refuses; raised before any connection is attempted."""

    def __init__(self) -> None:
        super().__init__(REFUSED_MESSAGE, {"reason": "egress_refused"})


def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (socket.gaierror when there are none)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class EgressGuard:
    """The allowed ranges and how names are resolved (a seam for tests)."""

    allow: tuple[IPNetwork, ...] = ()
    resolver: Resolver = system_resolver

    def addresses(self, host: str, port: int) -> list[IPAddress]:
        """The host's addresses, each one allowed; EgressRefused, or OSError when it does not resolve."""
        literal = parse_host_literal(host)
        found = [literal] if literal is not None else _parsed(self.resolver(host, port))
        if not found or refused_any(found, self.allow) is not None:
            raise EgressRefused()
        return found

    def check_url(self, url: str) -> None:
        """INVALID_INPUT for a non-http(s) URL or one whose host is refused; unresolved names pass."""
        parts = http_url(url)
        if parts is None or parts.hostname is None:
            raise InvalidInputError(
                "the URL must be http or https with a host and a numeric port, if any",
                {"reason": "bad_url"},
            )
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            self.addresses(parts.hostname, port)
        except (OSError, UnicodeError):  # a name IDNA cannot encode never resolves either
            return  # not resolvable now: every request checks again

    def transport(self, **options: Any) -> httpx.BaseTransport:
        """An httpx transport that connects only to addresses this guard allows."""
        return GuardedTransport(self, **options)


def _parsed(raw: Iterable[str]) -> list[IPAddress]:
    return [ipaddress.ip_address(text) for text in raw]


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, connecting only to addresses the guard checked a moment before."""

    def __init__(self, guard: EgressGuard) -> None:
        self._guard = guard
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = self._guard.addresses(host, port)
        except OSError as exc:
            raise httpcore.ConnectError("the host does not resolve") from exc
        failure: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over a :class:`GuardedBackend`; no proxy, no UNIX socket."""

    def __init__(self, guard: EgressGuard, *, limits: httpx.Limits | None = None) -> None:
        super().__init__(trust_env=False)
        limits = limits or httpx.Limits(max_connections=20, max_keepalive_connections=10)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(guard),
        )
