"""`fleet reservations create|list|get|cancel`: GPU reservations, spot capacity and their preemption notices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, state, table
from bcfleet.domain.states import ReservationState


@click.group("reservations")
def group() -> None:
    """GPU reservations: regular or spot, pool or node binding, with preemption notices."""


def _devices(r: dict[str, Any]) -> str:
    count = r["devices"][0]["count"]
    nodes = f" on each of {r['nodes']} nodes" if r["nodes"] > 1 else ""
    kind = "spot" if r["spot"] else "regular"
    return f"{count} GPU{'s' if count != 1 else ''}{nodes}, {r['binding']} binding, {kind}"


def _window(r: dict[str, Any]) -> str:
    during = r.get("during")
    return f"{during['start']} → {during['end']}" if during else "-"


def _explain(r: dict[str, Any]) -> list[str]:
    """Why it is pending, and when a preempted one must be done."""
    lines = []
    for condition in r.get("conditions", []):
        text = f"  {condition['type']}: {condition['reason']}: {condition['message']}"
        if condition["type"] == "Preempted" and r.get("deadline"):
            text += f"; runs until the deadline {r['deadline']}, checkpoint before then"
        if condition["type"] == "Unschedulable" and r["state"] == ReservationState.PENDING:
            text += "; retried every 30 s"
        lines.append(text)
    return lines


def reservation_text(r: dict[str, Any]) -> str:
    lines = [
        f"Reservation {r['id']} ({r['tenantId']})",
        f"  state:    {r['state']}"
        + (f" ({r['releaseReason']})" if r.get("releaseReason") else ""),
        f"  devices:  {_devices(r)}",
        f"  duration: {r['duration']}",
        f"  during:   {_window(r)}",
        f"  nodes:    {', '.join(r['nodeIds']) or '-'}",
    ]
    return "\n".join(lines + _explain(r))


def _why(r: Mapping[str, Any]) -> str:
    return "; ".join(f"{c['reason']}: {c['message']}" for c in r.get("conditions", []))


@fleet_command(group, "create")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
@click.option("--gpus", type=WHOLE, required=True, help="GPUs on each node.")
@click.option("--duration", required=True, help="e.g. 12h, 90m, 1d12h.")
@click.option("--start", help="RFC 3339 time (default: now).")
@click.option("--spot", is_flag=True, help="Spot capacity: cheaper, preempted with notice.")
@click.option("--binding", type=click.Choice(["pool", "node"]), default="pool", show_default=True)
@click.option("--nodes", type=WHOLE, default=1, show_default=True, help="A gang of K nodes.")
@click.option("--idempotency-key", "key")
def create(tenant: str, pool: str, gpus: int, duration: str, start: str | None, spot: bool,
           binding: str, nodes: int, key: str | None) -> None:  # fmt: skip
    """Reserve GPUs: placed now, placed after a spot notice, or pending with the reason."""
    s = state()
    made = s.fleet.api.reservations.create(
        s.credential, tenant_id=tenant, pool_id=pool, gpus=gpus, duration=duration, start=start,
        spot=spot, binding=binding, nodes=nodes, idempotency_key=key,
    )  # fmt: skip
    output(made, reservation_text)


def _list_row(item: Mapping[str, Any]) -> dict[str, Any]:
    """A listed reservation with the columns the table shows."""
    during = item.get("during")
    return {
        **item,
        "gpus": f"{item['devices'][0]['count']}x{item['nodes']}",
        "kind": "spot" if item["spot"] else "regular",
        "start": during["start"] if during else None,
        "end": during["end"] if during else None,
        "why": _why(item),
    }


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--pool")
@click.option("--state", "state_")
@click.option("--all", "include_released", is_flag=True, help="Include released reservations.")
def list_(tenant: str | None, pool: str | None, state_: str | None, include_released: bool) -> None:
    s = state()
    data = s.fleet.api.reservations.list(s.credential, tenant_id=tenant, pool=pool, state=state_,
                                         include_released=include_released)  # fmt: skip
    rows = [_list_row(item) for item in data["items"]]
    columns = [("ID", "id"), ("TENANT", "tenantId"), ("GPUS", "gpus"), ("KIND", "kind"),
               ("STATE", "state"), ("START", "start"), ("END", "end"), ("CONDITIONS", "why")]  # fmt: skip
    output({**data, "items": rows}, lambda d: table(d["items"], columns))


@fleet_command(group, "get")
@click.option("--tenant")
@click.argument("reservation_id")
def get(tenant: str | None, reservation_id: str) -> None:
    s = state()
    output(s.fleet.api.reservations.get(s.credential, reservation_id, tenant_id=tenant),
           reservation_text)  # fmt: skip


@fleet_command(group, "cancel")
@click.option("--tenant")
@click.argument("reservation_id")
def cancel(tenant: str | None, reservation_id: str) -> None:
    """Release now: GPUs freed, quota refunded."""
    s = state()
    output(s.fleet.api.reservations.cancel(s.credential, reservation_id, tenant_id=tenant),
           reservation_text)  # fmt: skip
