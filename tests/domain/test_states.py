"""Entity states are the strings the tables hold and the JSON shows; each entity has one live set."""

from __future__ import annotations

import json

from bcfleet.domain.states import (
    INSTANCE_LIVE,
    INSTANCE_ON_HOST,
    RESERVATION_LIVE,
    AgentReport,
    DeliveryState,
    HostState,
    InstanceState,
    PoolKind,
    ReservationState,
)
from bcfleet.schemas import load_schema


def test_states_are_their_stored_strings() -> None:
    assert [s.value for s in InstanceState] == [
        "pending",
        "provisioning",
        "running",
        "stopped",
        "deleted",
    ]
    assert [s.value for s in ReservationState] == [
        "pending",
        "placed",
        "binding",
        "active",
        "released",
    ]
    assert [s.value for s in HostState] == ["ready", "draining"]
    assert [s.value for s in DeliveryState] == ["pending", "delivered", "dead"]
    assert [k.value for k in PoolKind] == ["vps-host", "provider"]
    assert [r.value for r in AgentReport] == ["running", "ready", "stopped", "crashed"]
    assert json.dumps({"state": InstanceState.DELETED}) == '{"state": "deleted"}'
    assert f"{ReservationState.ACTIVE}" == "active"
    assert InstanceState.DELETED == "deleted"


def test_live_states() -> None:
    assert set(INSTANCE_LIVE) == {"provisioning", "running", "stopped"}
    assert set(INSTANCE_ON_HOST) == {"running", "stopped"} < set(INSTANCE_LIVE)
    assert set(RESERVATION_LIVE) == {"placed", "binding", "active"}
    assert InstanceState.PENDING not in INSTANCE_LIVE
    assert ReservationState.RELEASED not in RESERVATION_LIVE


def test_the_fleetconfig_schema_names_the_pool_kinds() -> None:
    pool = load_schema("fleetconfig")["$defs"]["pool"]
    assert pool["properties"]["kind"]["enum"] == [k.value for k in PoolKind]
