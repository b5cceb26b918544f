"""What depends on a row before it goes: the services an instance serves (deleting it is refused
while one is deployed on it), and what a tenant holds in a pool whose offer is taken back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.errors import ConflictError, NotFoundError
from bcfleet.fleet import Fleet
from tests.support.builders import token
from tests.support.tui import build_fleet, open_test_fleet


@pytest.fixture
def demo(tmp_path: Path) -> Fleet:
    """`fleet demo`'s fleet: acme's prod/web is deployed on an instance."""
    return open_test_fleet(build_fleet(tmp_path))


def served_web(fleet: Fleet) -> tuple[str, str]:
    web = next(
        s
        for s in fleet.api.services.list(OP)["items"]
        if (s["workspace"], s["name"]) == ("prod", "web")
    )
    return str(web["id"]), str(web["instanceId"])


def test_an_instance_serving_a_deployed_service_names_it_and_is_not_deleted(demo: Fleet) -> None:
    service, instance = served_web(demo)
    found = demo.api.dependents.of_instance(OP, instance)["items"]
    assert found == [{"kind": "service", "id": service, "name": "prod/web", "state": "deployed"}]
    name = demo.api.instances.show(OP, instance)["name"]
    with pytest.raises(ConflictError) as refused:
        demo.api.instances.delete(OP, instance)
    assert refused.value.message == (
        f"instance {name} serves service prod/web (deployed): undeploy it first"
    )
    assert refused.value.details["dependents"] == found
    assert demo.api.instances.show(OP, instance)["state"] != "deleted"
    demo.api.services.undeploy(OP, service)
    assert demo.api.dependents.of_instance(OP, instance)["items"] == []


def test_an_instance_of_another_tenant_is_not_found(demo: Fleet) -> None:
    _service, instance = served_web(demo)
    with pytest.raises(NotFoundError):
        demo.api.dependents.of_instance(token(demo, "globex", "dev"), instance)


def test_taking_an_offer_back_names_what_the_tenant_holds_there_to_the_operator_only(
    demo: Fleet,
) -> None:
    pool = next(p for p in demo.api.pools.list(OP)["items"] if p["name"] == "gpu-burst")
    held = demo.api.dependents.of_offer(OP, tenant_id="root", pool=pool["id"], to="acme")["items"]
    instances = [
        i["name"]
        for i in demo.api.instances.list(OP)["items"]
        if i["tenantId"] == "acme" and i["poolId"] == pool["id"] and i["state"] != "deleted"
    ]
    reservations = [
        r["id"]
        for r in demo.api.reservations.list(OP)["items"]
        if r["tenantId"] == "acme" and r["poolId"] == pool["id"] and r["state"] != "released"
    ]
    assert instances and reservations  # the demo's acme runs and reserves there
    assert sorted(d["name"] for d in held if d["kind"] == "instance") == sorted(instances)
    assert sorted(d["id"] for d in held if d["kind"] == "reservation") == sorted(reservations)
    none = demo.api.dependents.of_offer(OP, tenant_id="root", pool=pool["id"], to="initech")
    assert none["items"] == []
