"""instances.list's condition filter, and its items read as instances.show has them.

The listing is read set-based; these tests hold it to what instances.show says
about the same rows, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import pytest

from bcfleet.client.fleet_client import FleetClient
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.builders import OP
from tests.support.capacity import DEGRADED, create, gpu_fleet, has_degraded
from tests.support.http import error_code, served


def test_instances_list_keeps_those_with_a_condition(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)
    pinned = create(fleet, pool, "pin")
    create(fleet, pool, "plain")
    create(fleet, pool, "pin", tenant="root")
    listed = fleet.api.instances.list(OP, condition=DEGRADED)["items"]
    assert len(listed) == 2 and all(has_degraded(i) for i in listed)
    mine = fleet.api.instances.list(OP, tenant_id="acme", condition=DEGRADED)["items"]
    assert [i["id"] for i in mine] == [pinned["id"]]
    assert fleet.api.instances.list(OP, condition="Unschedulable")["items"] == []
    fleet.api.instances.delete(OP, pinned["id"])
    assert len(fleet.api.instances.list(OP, condition=DEGRADED)["items"]) == 1
    with pytest.raises(InvalidInputError):
        fleet.api.instances.list(OP, condition="Placement%")


def test_a_listed_instance_reads_as_instances_show_has_it(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)
    made = [
        create(fleet, pool, name)
        for name in ("gpu2", "pin", "plain", "gpu2", "gpu2", "gpu2", "gpu2")
    ]
    fleet.api.instances.stop(OP, made[2]["id"])
    fleet.api.instances.delete(OP, made[1]["id"])
    assert any(i["state"] == "pending" for i in made)  # the GPUs ran out
    listed = fleet.api.instances.list(OP, include_deleted=True)["items"]
    oldest_first = sorted(made, key=lambda i: (i["createdAt"], i["id"]))
    assert [i["id"] for i in listed] == [i["id"] for i in oldest_first]
    for item in listed:
        assert item == fleet.api.instances.show(OP, item["id"])
    shown = {i["id"]: i for i in listed}
    assert "deletedAt" in shown[made[1]["id"]] and shown[made[2]["id"]]["state"] == "stopped"
    assert [i["id"] for i in fleet.api.instances.list(OP)["items"]] == [
        i["id"] for i in oldest_first if i["id"] != made[1]["id"]
    ]


def test_the_http_api_serves_the_condition_filter(fleet: Fleet) -> None:
    pool = gpu_fleet(fleet)
    pinned = create(fleet, pool, "pin")
    create(fleet, pool, "gpu2")
    with served(fleet) as (_server, api):
        degraded = api.get("/v1/instances", params={"condition": DEGRADED}).json()["items"]
        assert [i["id"] for i in degraded] == [pinned["id"]]
        refused = api.get("/v1/instances", params={"condition": "50%"})
        assert refused.status_code == 400 and error_code(refused) == "INVALID_INPUT"
        with FleetClient(str(api.http.base_url), api.token) as client:
            assert [i["id"] for i in client.instances(condition=DEGRADED)] == [pinned["id"]]
