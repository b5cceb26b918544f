"""`fleet capacity preview`: would a GPU reservation fit now, or by preempting spot work after the notice?"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, state


@click.group("capacity")
def group() -> None:
    """Capacity previews."""


def preview_text(p: dict[str, Any]) -> str:
    if p["fits"]:
        names = ", ".join(c.get("name") or c["id"] for c in p["candidates"])
        return f"fits now on {len(p['candidates'])} candidate node(s): {names}"
    lines = [f"does not fit now: {p['reason']}"]
    preemptible = p.get("preemptible")
    if preemptible:
        at = datetime.fromtimestamp(preemptible["startsAt"] / 1000, UTC)
        count = preemptible["reservations"]
        lines.append(
            f"would fit by preempting {count} spot reservation{'s' if count != 1 else ''}, "
            f"starting {at.isoformat().replace('+00:00', 'Z')} after their notice"
        )
    else:
        why = p.get("preemptReason") or "spot requests and node leases never preempt"
        lines.append(f"no preemption would make it fit: {why}")
    return "\n".join(lines)


@fleet_command(group, "preview")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
@click.option("--gpus", type=WHOLE, required=True, help="GPUs on each node.")
@click.option("--duration", required=True)
@click.option("--spot", is_flag=True)
@click.option("--nodes", type=WHOLE, default=1, show_default=True)
@click.option("--binding", type=click.Choice(["pool", "node"]), default="pool", show_default=True)
@click.option("--start", help="RFC 3339 time (default: now).")
def preview(tenant: str, pool: str, gpus: int, duration: str, spot: bool, nodes: int,
            binding: str, start: str | None) -> None:  # fmt: skip
    """{fits, candidates, reason, preemptible: {reservations, startsAt}}: a count, never ids."""
    s = state()
    output(s.fleet.api.capacity.preview(s.credential, tenant_id=tenant, pool_id=pool, gpus=gpus,
                                        duration=duration, nodes=nodes, spot=spot, start=start,
                                        binding=binding), preview_text)  # fmt: skip
