"""The agent's side of the HTTP API (httpx): report an inventory, pull specs, report states.

`fleet agent run` calls it. Errors come back as the server's FleetError subclass, found
by the stable code of the error JSON (PRODUCT.md §3).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from bcfleet import __version__
from bcfleet.errors import FleetError, error_from_document


def error_from_response(response: httpx.Response) -> FleetError:
    """The FleetError an error answer carries, decoded by the tree's one decoder."""
    try:
        document: Any = response.json()
    except ValueError:
        document = response.text
    return error_from_document(response.status_code, document, response.headers.get("retry-after"))


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
        self.http = httpx.Client(
            base_url=server.rstrip("/"),
            headers={
                "Authorization": f"Bearer {token}",
                "User-Agent": f"bcfleet-agent/{__version__}",
            },
            timeout=timeout,
            transport=transport,
        )
        self.states_supported = True

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise error_from_response(response)
        return response.json()

    def report_inventory(self, host: str, inventory: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST", f"/v1/hosts/{quote(host, safe='')}/inventory", json=inventory
        )
        return result

    def specs(self, host: str) -> list[dict[str, Any]]:
        """The InstanceSpecs the server wants on this host."""
        body = self._call("GET", f"/v1/hosts/{quote(host, safe='')}/specs")
        return list(body["items"])

    def report_state(self, host: str, instance_id: str, state: str) -> bool:
        """Tell the server an instance's observed state; False when the server has no such route."""
        if not self.states_supported:
            return False
        path = f"/v1/hosts/{quote(host, safe='')}/instances/{quote(instance_id, safe='')}/state"
        try:
            self._call("POST", path, json={"state": state})
        except FleetError as error:
            if error.details.get("reason") == "no_route":
                self.states_supported = False
                return False
            raise
        return True

    def close(self) -> None:
        self.http.close()
