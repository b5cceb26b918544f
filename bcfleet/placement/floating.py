"""Floating guests' CPU sets follow the pins: called when a pinned guest lands on or leaves a host.

Placement, resize and release call refloat_guests with the guest whose placement changed; it
reads that host's live guests (no other host's), asks domain/floating.py which floating
guests' cpusets change, and writes those in one statement. The agent pulls the new specs and
re-pins the guests live. Nothing runs for a floating guest's own placement: the chooser
already gives it the set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import JSON, String, bindparam, column, text, update
from sqlmodel import Session

from bcfleet.domain.floating import refloat_host
from bcfleet.domain.numa import HostPlacement, reserved_cpus
from bcfleet.domain.states import INSTANCE_LIVE
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.models import Pool
from bcfleet.store.tables import INSTANCES

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle

_LIVE_IN = ", ".join(f"'{state.value}'" for state in INSTANCE_LIVE)
_GUESTS_ON = DriverStatement(
    text(
        "SELECT id, host_placement FROM instances WHERE node_id = :node "
        f"AND state IN ({_LIVE_IN}) AND host_placement IS NOT NULL"
    ).columns(column("id", String), column("host_placement", JSON))
)
_SET_PLACEMENT = (
    update(INSTANCES)
    .where(INSTANCES.c.id == bindparam("guest"))
    .values(host_placement=bindparam("placement"), updated_at=bindparam("now"))
)


def refloat_guests(
    session: Session,
    fleet: PlacementHandle,
    pool: Pool,
    node_id: str,
    *,
    guest_id: str,
    placement: HostPlacement | None,
) -> int:
    """Re-derive the host's floating cpusets now that guest_id has `placement` there (None: it
    left); returns how many floating guests changed."""
    from bcfleet.placement.claims import host_inventory

    guests = {
        str(gid): HostPlacement.from_json(doc)
        for gid, doc in _GUESTS_ON.run(session, {"node": node_id}).all()
        if doc and gid != guest_id
    }
    if placement is not None:
        guests[guest_id] = placement
    inventory = host_inventory(session, fleet, node_id)
    reserve = fleet.settings.host_reserve.with_overrides(pool.host_reserve).vcpu
    changed = refloat_host(inventory, reserved_cpus(inventory, reserve), guests)
    if changed:
        now = fleet.now()
        session.connection().execute(
            _SET_PLACEMENT,
            [
                {"guest": gid, "placement": new.to_json(), "now": now}
                for gid, new in sorted(changed.items())
            ],
        )
    return len(changed)
