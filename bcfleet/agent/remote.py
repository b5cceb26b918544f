"""The agent's side of the HTTP API: report an inventory, pull specs, report states, and
report its guests' conditions and balloons and the host's health when they change.

`fleet agent run` calls it, through the shared FleetClient. Errors come back as the
server's FleetError subclass, found by the stable code of the error JSON (PRODUCT.md §3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from bcfleet.client.fleet_client import FleetClient
from bcfleet.domain.agent_report import (
    GuestAgentReportJson,
    HealthReportJson,
    changed,
    guest_reports,
    host_health,
)
from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.errors import FleetError, NotFoundError


class AgentConnection:
    """One host agent's connection to `fleet serve` with a bearer token."""

    def __init__(
        self,
        server: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.client = FleetClient(
            server, token, timeout=timeout, transport=transport, product="bcfleet-agent"
        )
        self.states_supported = True
        self.guests_supported = True
        self.sent_guests: dict[str, GuestAgentReportJson] = {}
        self.sent_health: HealthReportJson | None = None

    def report_inventory(self, host: str, inventory: dict[str, Any]) -> dict[str, Any]:
        return self.client.report_inventory(host, inventory)

    def specs(self, host: str) -> list[InstanceSpecJson]:
        """The InstanceSpecs the server wants on this host."""
        return self.client.host_specs(host)

    def report_state(self, host: str, instance_id: str, state: str) -> bool:
        """Tell the server an instance's observed state; False when the server has no such route."""
        if not self.states_supported:
            return False
        try:
            self.client.report_instance_state(host, instance_id, state)
        except FleetError as error:
            if error.details.get("reason") == "no_route":
                self.states_supported = False
                return False
            raise
        return True

    def report_guests(
        self,
        host: str,
        guests: Iterable[str],
        problems: Mapping[str, str],
        balloons: Mapping[str, int],
    ) -> list[GuestAgentReportJson]:
        """Send the host's health and the guests' conditions and balloons that changed since
        the last report that went through (all of them the first time); those sent.

        A guest the server no longer has on this host (deleted meanwhile) makes it refuse the
        whole report (NOT_FOUND): none of it counts as sent, so the next round sends those
        changes again, without the guest its specs no longer name."""
        now = guest_reports(guests, problems, balloons)
        health = host_health(problems)
        todo = changed(self.sent_guests, now)
        if not self.guests_supported or (not todo and health == self.sent_health):
            return []
        try:
            self.client.report_guests(host, health, list(todo))
        except FleetError as error:
            if error.details.get("reason") == "no_route":
                self.guests_supported = False
            elif not isinstance(error, NotFoundError):
                raise
            return []
        self.sent_guests, self.sent_health = now, health
        return todo

    def close(self) -> None:
        self.client.close()
