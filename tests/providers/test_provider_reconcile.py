"""providers.reconcile against the fake provider over real HTTP: one server per live instance, whatever fails.

Every test ends with the same check: exactly one server per live instance,
carrying our labels and recorded on the instance, and none for deleted ones.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func
from sqlmodel import SQLModel, col, select

from bcfleet.api.fake_provider import FAKE_TOKEN_ENV, start_fake_provider
from bcfleet.clock import FakeClock
from bcfleet.domain.provider_plan import LABEL_FLEET, LABEL_INSTANCE, LABEL_POOL, server_name
from bcfleet.errors import UnsupportedError
from bcfleet.fleet import Fleet
from bcfleet.jobs.providers import fleet_id, run_reconcile
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.store.models import Allocation, FleetIdentity, Instance
from tests.support.builders import OP
from tests.support.waiting import wait_until

TOKEN = "hc-reconcile-test-token"
BOOT_SECONDS = 5.0


@dataclass
class World:
    fleet: Fleet
    fake: FakeHetzner
    clock: FakeClock
    pool_id: str

    def instance(self, flavor: str = "cx23") -> str:
        made = self.fleet.api.instances.create(
            OP, tenant_id="acme", pool_id="hz-fsn", flavor=flavor
        )
        return str(made["id"])

    def reconcile(self) -> dict[str, int]:
        return run_reconcile(self.fleet, self.clock.now())

    def converge(self, passes: int = 10) -> None:
        """Run passes until one changes nothing, booting servers in between."""
        for _ in range(passes):
            counts = self.reconcile()
            self.clock.advance(BOOT_SECONDS)
            busy = ("created", "adopted", "recorded", "deleted", "forgotten", "raced", "unknown")
            if not any(counts[k] for k in busy) and not counts["rateLimited"]:
                return
        raise AssertionError("the reconciler did not settle")

    def show(self, instance_id: str) -> dict[str, Any]:
        shown: dict[str, Any] = self.fleet.api.instances.show(OP, instance_id)
        return shown


@pytest.fixture
def world(any_fleet: Fleet, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("HCLOUD_TOKEN", TOKEN)
    fleet = any_fleet
    fleet.api.offer_catalog.client_options["timeout"] = 1.0
    with FakeHetzner(token=TOKEN, clock=clock, boot_seconds=BOOT_SECONDS) as fake:
        fleet.api.provider_accounts.create(
            OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
            endpoint=fake.url,
        )  # fmt: skip
        fleet.api.tenants.create(OP, "acme")
        pool = fleet.api.pools.create(
            OP, tenant_id="root", name="hz-fsn", kind="provider", provider_account="hz"
        )
        fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="acme")
        fleet.api.flavors.create(
            OP, tenant_id="root", pool_id="hz-fsn", name="cx23", vcpu=2, memory_gib=4,
            disk_gib=40, offer_id="cx23",
        )  # fmt: skip
        yield World(fleet, fake, clock, pool["id"])


def assert_one_server_per_live_instance(world: World) -> None:
    with world.fleet.read() as session:
        rows = session.exec(select(Instance).where(Instance.pool_id == world.pool_id)).all()
    live = {i.id: i for i in rows if i.state != "deleted"}
    ours = [
        s for s in world.fake.servers() if s["labels"].get(LABEL_FLEET) == fleet_id(world.fleet)
    ]
    by_instance: dict[str, list[dict[str, Any]]] = {}
    for server in ours:
        by_instance.setdefault(server["labels"][LABEL_INSTANCE], []).append(server)
    assert sorted(by_instance) == sorted(live), "a server for every live instance and no other"
    for instance_id, servers in by_instance.items():
        assert len(servers) == 1, f"{instance_id} has {len(servers)} servers"
        assert servers[0]["name"] == server_name(instance_id)
        assert live[instance_id].provider_server_id == str(servers[0]["id"])
    for instance in rows:
        if instance.state == "deleted" and instance.provider_server_id is not None:
            assert instance.provider_status == "deleted"


# ----- the document's walkthrough -----------------------------------------------------------


def test_an_instance_on_a_provider_pool_gets_one_labelled_server(world: World) -> None:
    instance_id = world.instance()
    assert world.show(instance_id)["state"] == "provisioning"
    counts = world.reconcile()
    assert counts["created"] == 1
    [server] = world.fake.servers()
    assert server["name"] == server_name(instance_id)
    assert server["labels"] == {
        LABEL_INSTANCE: instance_id,
        LABEL_POOL: world.pool_id,
        LABEL_FLEET: fleet_id(world.fleet),
    }
    assert server["server_type"]["name"] == "cx23"
    assert server["location"]["name"] == "fsn1", "the cheapest region selling the offer"
    shown = world.show(instance_id)
    assert (shown["state"], shown["providerServerId"], shown["providerStatus"]) == (
        "running", str(server["id"]), "running",
    ), "the pass follows the create action until it ends"  # fmt: skip
    assert_one_server_per_live_instance(world)


def test_the_instance_runs_when_its_server_does(world: World) -> None:
    instance_id = world.instance()
    assert world.reconcile()["created"] == 1
    shown = world.show(instance_id)
    assert (shown["state"], shown["providerStatus"]) == ("running", "running")
    # ready once the create action ended (polled each second while the server booted)
    assert "2026-11-30T10:00:05" <= shown["readyAt"] < "2026-11-30T10:00:10"
    assert world.reconcile()["recorded"] == 0, "nothing changes once settled"


def test_quota_is_charged_and_there_is_no_allocation_and_no_metering(world: World) -> None:
    instance_id = world.instance()
    world.converge()
    used = world.fleet.api.quotas.show(OP, tenant_id="acme", pool="hz-fsn")["items"][0]["used"]
    assert (used["vcpu"], used["memoryGiB"], used["diskGiB"]) == (2, 4, 40)
    with world.fleet.read() as session:
        allocations = session.exec(
            select(Allocation).where(Allocation.consumer_id == instance_id)
        ).all()
        usage_rows = {
            table.name: session.execute(select(func.count()).select_from(table)).scalar_one()
            for table in SQLModel.metadata.sorted_tables
            if table.name.startswith("usage")
        }
    assert allocations == []
    assert world.show(instance_id)["nodeId"] is None
    assert all(count == 0 for count in usage_rows.values()), usage_rows


def test_deleting_the_instance_deletes_its_server_and_refunds_quota(world: World) -> None:
    instance_id = world.instance()
    world.converge()
    world.fleet.api.instances.delete(OP, instance_id)
    counts = world.reconcile()
    assert (counts["deleted"], counts["forgotten"]) == (1, 1)
    assert world.fake.servers() == []
    with world.fleet.read() as session:
        instance = session.get(Instance, instance_id)
        assert instance is not None and instance.provider_status == "deleted"
    used = world.fleet.api.quotas.show(OP, tenant_id="acme", pool="hz-fsn")["items"][0]["used"]
    assert used["vcpu"] == 0
    assert world.reconcile()["deleted"] == 0
    assert_one_server_per_live_instance(world)


def test_resizing_a_provider_instance_is_unsupported(world: World) -> None:
    instance_id = world.instance()
    with pytest.raises(UnsupportedError):
        world.fleet.api.instances.resize(OP, instance_id, flavor="cx23")


def test_the_fleet_id_is_made_once_per_database(world: World) -> None:
    first = fleet_id(world.fleet)
    assert first.startswith("flt_") and fleet_id(world.fleet) == first
    with world.fleet.read() as session:
        assert len(session.exec(select(FleetIdentity)).all()) == 1


# ----- faults --------------------------------------------------------------------------------


def test_a_create_that_timed_out_after_the_provider_made_the_server_is_adopted(
    world: World,
) -> None:
    instance_id = world.instance()
    world.fake.hang_after_create(times=1, seconds=3.0)  # the client gives up after 1 s
    counts = world.reconcile()
    assert counts["created"] == 1
    assert world.fake.count("POST", "/servers") == 1, "found by name, not created again"
    assert world.show(instance_id)["providerServerId"] == str(world.fake.servers()[0]["id"])
    world.converge()
    assert_one_server_per_live_instance(world)


def test_a_server_a_lost_pass_made_is_adopted_by_label_on_the_next(world: World) -> None:
    instance_id = world.instance()
    labels = {LABEL_FLEET: fleet_id(world.fleet), LABEL_POOL: world.pool_id,
              LABEL_INSTANCE: instance_id}  # fmt: skip
    world.fake.add_server(server_name(instance_id), "cx23", "fsn1", labels)
    counts = world.reconcile()
    assert (counts["adopted"], counts["created"]) == (1, 0)
    assert world.fake.count("POST", "/servers") == 0
    assert_one_server_per_live_instance(world)


def test_a_429_storm_delays_but_never_duplicates(world: World) -> None:
    for _ in range(3):
        world.instance()
    world.fake.rate_limit_next(times=12, reset_in=2.0)
    first = world.reconcile()
    assert first["rateLimited"] == 1, first
    world.converge()
    assert len(world.fake.servers()) == 3
    assert_one_server_per_live_instance(world)


def test_a_provider_restart_mid_reconcile_loses_and_duplicates_nothing(world: World) -> None:
    for _ in range(6):
        world.instance()
    world.fake.slow_down(0.15)
    worker = threading.Thread(target=world.reconcile)
    worker.start()
    wait_until(lambda: len(world.fake.servers()) >= 2)
    world.fake.restart(keep_state=True)
    world.fake.slow_down(0)
    worker.join(timeout=60)
    assert not worker.is_alive()
    world.converge()
    assert len(world.fake.servers()) == 6
    assert_one_server_per_live_instance(world)


def test_an_instance_deleted_while_its_server_is_made_gets_that_server_deleted(
    world: World,
) -> None:
    world.fleet.api.offer_catalog.client_options["timeout"] = 10.0
    instance_id = world.instance()
    world.fake.hang_after_create(times=1, seconds=1.5)
    counts: dict[str, int] = {}
    worker = threading.Thread(target=lambda: counts.update(world.reconcile()))
    worker.start()
    wait_until(lambda: bool(world.fake.servers()))  # made, its answer held back
    world.fleet.api.instances.delete(OP, instance_id)
    worker.join(timeout=60)
    assert (counts["created"], counts["raced"], counts["deleted"]) == (1, 1, 1)
    assert world.fake.servers() == []
    with world.fleet.read() as session:
        instance = session.get(Instance, instance_id)
        assert instance is not None and instance.state == "deleted"
        assert instance.provider_status == "deleted" and instance.provider_server_id is not None
    assert_one_server_per_live_instance(world)


def test_two_reconcilers_at_once_make_one_server_each(world: World) -> None:
    for _ in range(4):
        world.instance()
    world.fake.slow_down(0.05)
    workers = [threading.Thread(target=world.reconcile) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    world.fake.slow_down(0)
    world.converge()
    assert len(world.fake.servers()) == 4
    assert_one_server_per_live_instance(world)


def test_an_orphan_with_our_labels_is_deleted_after_the_grace_period(world: World) -> None:
    grace = world.fleet.settings.provider_delete_grace_seconds
    labels = {LABEL_FLEET: fleet_id(world.fleet), LABEL_POOL: world.pool_id,
              LABEL_INSTANCE: "ins_01jzzzzzzzzzzzzzzzzzzzzzzz"}  # fmt: skip
    world.fake.add_server("bcf-ins-01jzzzzzzzzzzzzzzzzzzzzzzz", "cx23", "fsn1", labels)
    world.fake.add_server(
        "bcf-no-instance-label", "cx23", "fsn1", {LABEL_FLEET: labels[LABEL_FLEET]}
    )
    assert world.reconcile()["waiting"] == 2
    world.clock.advance(grace - 1)
    assert world.reconcile()["deleted"] == 0
    assert len(world.fake.servers()) == 2
    world.clock.advance(2)
    assert world.reconcile()["deleted"] == 2
    assert world.fake.servers() == []


def test_servers_without_our_labels_are_never_touched(world: World) -> None:
    world.fake.add_server("web-1", "cx23", "fsn1")
    world.fake.add_server("other-fleet", "cx23", "fsn1", {LABEL_FLEET: "flt_someone_else"})
    instance_id = world.instance()
    world.converge()
    world.clock.advance(world.fleet.settings.provider_delete_grace_seconds * 10)
    world.converge()
    names = world.fake.server_names()
    assert names == sorted(["web-1", "other-fleet", server_name(instance_id)])
    assert world.fake.count("DELETE", "/servers/4000001") == 0
    assert_one_server_per_live_instance(world)


# ----- failures are written on the instance -------------------------------------------------


def test_a_sold_out_offer_leaves_the_instance_provisioning_with_a_reason(world: World) -> None:
    for region in ("fsn1", "nbg1", "hel1"):
        world.fake.sell_out("cx23", region)
    world.fleet.api.offer_catalog.invalidate()
    instance_id = world.instance()
    assert world.reconcile()["failed"] == 1
    shown = world.show(instance_id)
    assert shown["state"] == "provisioning"
    [condition] = shown["conditions"]
    assert (condition["type"], condition["reason"]) == ("ProviderError", "OfferUnavailable")
    with world.fake.state.lock:
        world.fake.state.faults.sold_out.clear()
    world.fleet.api.offer_catalog.invalidate()
    world.converge()
    assert world.show(instance_id)["conditions"] == []
    assert_one_server_per_live_instance(world)


def test_a_refused_create_is_written_on_the_instance_and_retried(world: World) -> None:
    instance_id = world.instance()
    world.fake.unavailable_next_creates(1)
    counts = world.reconcile()
    assert (counts["created"], counts["failed"]) == (0, 1)
    condition = world.show(instance_id)["conditions"][0]
    assert condition["reason"] == "CreateFailed"
    assert condition["message"].startswith("CAPACITY_UNAVAILABLE: ")
    world.converge()
    assert world.show(instance_id)["state"] == "running"
    assert_one_server_per_live_instance(world)


def test_an_unset_token_fails_the_pass_without_touching_instances(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance_id = world.instance()
    monkeypatch.delenv("HCLOUD_TOKEN")
    assert world.reconcile()["errors"] == 1
    assert world.show(instance_id)["state"] == "provisioning"
    with world.fleet.read() as session:
        assert session.exec(select(col(Instance.provider_server_id))).all() == [None]


def test_start_fake_provider_is_all_a_demo_needs(
    fleet: Fleet, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_TOKEN_ENV, "demo-token")  # restored after the test
    with start_fake_provider(clock=clock) as fake:
        account = fake.create_account(fleet)
        assert (account["endpoint"], account["tokenEnv"]) == (fake.url, FAKE_TOKEN_ENV)
        fleet.api.pools.create(
            OP, tenant_id="root", name="demo-hz", kind="provider", provider_account=account["name"]
        )
        fleet.api.flavors.create(
            OP, tenant_id="root", pool_id="demo-hz", name="cx23", vcpu=2, memory_gib=4,
            disk_gib=40, offer_id="cx23",
        )  # fmt: skip
        made = fleet.api.instances.create(OP, tenant_id="root", pool_id="demo-hz", flavor="cx23")
        assert run_reconcile(fleet, clock.now())["created"] == 1
        assert fake.server.server_names() == [server_name(made["id"])]
