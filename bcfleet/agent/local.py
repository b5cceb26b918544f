"""`fleet agent simulate`: the simulated agent of every host in the database, in process.

One round reports a simulated inventory for each host that has none yet (hosts of the
demo and of tests), through the same hosts API a real agent's report reaches, then says
"ready" for every placed instance whose boot delay has passed, through the instances API
(bcfleet.agent.simulate).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bcfleet.agent.runner import simulated_inventory
from bcfleet.agent.simulate import boot_instances
from bcfleet.api.auth import Credential
from bcfleet.fleet import Fleet


def simulate_round(
    fleet: Fleet, now: datetime, credential: Credential, *, boot_seconds: float | None = None
) -> dict[str, Any]:
    """One round over every host the credential sees: missing inventories, then booted guests."""
    hosts = fleet.api.hosts.list(credential)["items"]
    reported = 0
    for host in hosts:
        if host["inventoryReportedAt"] is None:
            fleet.api.hosts.report(
                credential, host=host["id"], inventory=simulated_inventory(host["name"])
            )
            reported += 1
    booted = boot_instances(
        fleet, credential, now, boot_seconds=boot_seconds, host_ids={h["id"] for h in hosts}
    )
    return {"hosts": len(hosts), "inventoriesReported": reported, "booted": booted}
