"""The agent's side of the HTTP API: report an inventory, pull specs, report states.

`fleet agent run` calls it, through the shared FleetClient. Errors come back as the
server's FleetError subclass, found by the stable code of the error JSON (PRODUCT.md §3).
"""

from __future__ import annotations

from typing import Any

import httpx

from bcfleet.client.fleet_client import FleetClient
from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.errors import FleetError


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

    def close(self) -> None:
        self.client.close()
