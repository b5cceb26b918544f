"""instances.create reads its pool, flavor and new instance as copies, yet a transaction that joins
it sees what it wrote, and it sees what the transaction changed before it."""

from __future__ import annotations

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from tests.support.builders import flavor
from tests.support.capacity import invariants_ok, pool_with_hosts


def test_a_joined_transaction_sees_the_instance_and_the_create_sees_its_pool_change(
    any_fleet: Fleet,
) -> None:
    fleet = any_fleet
    pool = pool_with_hosts(fleet, cpus=18, numa_nodes=2)
    flavor(fleet, pool["id"], "pin2", vcpu=2, memory_gib=2, disk_gib=10, placement={"pinned": True})
    with fleet.transaction() as joined:
        # a change to the pool earlier in the transaction: the placement keeps 6 CPUs off
        joined.api.pools.update(OP, tenant_id="root", pool=pool["id"], host_reserve={"vcpu": 6})
        made = joined.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="pin2")
        assert joined.api.instances.show(OP, made["id"], tenant_id="acme") == made
        listed = joined.api.instances.list(OP, tenant_id="acme")["items"]
        assert [i["id"] for i in listed] == [made["id"]]
    assert made["state"] == "running"
    assert min(made["hostPlacement"]["cpus"]) >= 6
    assert fleet.api.instances.show(OP, made["id"], tenant_id="acme") == made
    invariants_ok(fleet)
