"""Guest tenants see the hosts they run on only as opaque ids of their own (hid_…), as Nova's hostId.

hostco owns the pool "shared" with two hosts and offers it to acme and initech. acme runs
three instances there (so two share a host) and holds a GPU reservation; initech runs one
instance; hostco runs one of its own. acme, initech and root acting as acme see hid_ ids;
hostco (the owner) and root's admin see the real node ids and names.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

import pytest
from sqlmodel import select

from bcfleet.domain.host_ids import HOST_ID_PREFIX, HostView, guest_host_id, node_refs
from bcfleet.errors import FleetError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.jobs.vps_usage import run_vps_usage
from bcfleet.jobs.webhooks import enqueue
from bcfleet.store.host_view import tenant_host_view
from bcfleet.store.id_chunks import CHUNK
from bcfleet.store.models.webhooks import WebhookDelivery
from tests.support.builders import OP, inventory, token

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
HOSTS = ("hostco-rack7-a", "hostco-rack7-b")
"""The owner's host names: none of them may reach a guest."""


# --- the pure rule -----------------------------------------------------------------------


def test_a_guest_host_id_is_novas_recipe_per_tenant_and_host() -> None:
    digest = hashlib.sha224(b"acme\0node_1").hexdigest()
    assert guest_host_id("acme", "node_1") == HOST_ID_PREFIX + digest
    assert guest_host_id("acme", "node_1") == guest_host_id("acme", "node_1")
    assert guest_host_id("acme", "node_1") != guest_host_id("initech", "node_1")
    assert guest_host_id("acme", "node_1") != guest_host_id("acme", "node_2")
    assert "node_1" not in guest_host_id("acme", "node_1")


@pytest.mark.parametrize(
    ("view", "data", "expected"),
    [
        pytest.param(
            HostView(),
            {"host": "h1", "nodeId": "node_1", "nodes": ["node_1"]},
            {"host": "h1", "nodeId": "node_1", "nodes": ["node_1"]},
            id="root-sees-everything",
        ),
        pytest.param(
            HostView("hostco", frozenset({"node_1"})),
            {"host": "h1", "nodeId": "node_1"},
            {"host": "h1", "nodeId": "node_1"},
            id="owner-keeps-its-host-name",
        ),
        pytest.param(
            HostView("acme"),
            {"host": "h1", "nodeId": "node_1"},
            {"nodeId": guest_host_id("acme", "node_1")},
            id="guest-loses-the-name",
        ),
        pytest.param(
            HostView("acme"),
            {"state": "placed", "nodes": ["node_1", "node_2"]},
            {
                "state": "placed",
                "nodes": [guest_host_id("acme", "node_1"), guest_host_id("acme", "node_2")],
            },
            id="guest-placed-nodes-opaque",
        ),  # fmt: skip
        pytest.param(
            HostView("acme"), {"host": "h1"}, {}, id="a-name-without-a-node-id-is-dropped"
        ),
        pytest.param(
            HostView("acme"),
            {"nodes": 2, "by": "rsv_1"},
            {"nodes": 2, "by": "rsv_1"},
            id="counts-and-other-fields-untouched",
        ),  # fmt: skip
    ],
)
def test_event_data_through_a_view(
    view: HostView, data: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert view.event_data(data) == expected


def test_views_of_candidates_and_nodes() -> None:
    candidates = [{"id": "node_1", "name": "h1"}, {"id": "node_2", "name": "h2"}]
    owner = HostView("hostco", frozenset({"node_1", "node_2"}))
    assert owner.candidates(candidates) == candidates
    guest = HostView("acme")
    assert guest.candidates(candidates) == [
        {"id": guest_host_id("acme", "node_1")},
        {"id": guest_host_id("acme", "node_2")},
    ]
    assert guest.node(None) is None and guest.nodes([]) == []
    assert node_refs({"nodeId": "node_1", "nodes": ["node_2"], "nodeIds": ["node_3", 4]}) == {
        "node_1",
        "node_2",
        "node_3",
    }


# --- the fleet ---------------------------------------------------------------------------


def _world(fleet: Fleet) -> dict[str, Any]:
    api = fleet.api
    for tenant in ("hostco", "acme", "initech"):
        api.tenants.create(OP, tenant)
    pool = api.pools.create(OP, tenant_id="hostco", name="shared", kind="vps-host",
                            gpu_model="L40S")  # fmt: skip
    for tenant in ("acme", "initech"):
        api.pools.offer(OP, tenant_id="hostco", pool=pool["id"], to=tenant)
    api.flavors.create(OP, tenant_id="hostco", pool_id=pool["id"], name="g1.small", vcpu=2,
                       memory_gib=4, disk_gib=40)  # fmt: skip
    hosts = {}
    for name in HOSTS:
        hosts[name] = api.hosts.adopt(OP, tenant_id="hostco", pool=pool["id"], name=name,
                                      labels=PLACEMENT)["id"]  # fmt: skip
        api.hosts.report(OP, host=name, inventory=inventory(cpus=16, gpus=2))
    run_vps_hosts(fleet, fleet.now())
    api.webhooks.create(OP, tenant_id="acme", url="https://acme.example/hook")

    def run(tenant: str) -> dict[str, Any]:
        return api.instances.create(OP, tenant_id=tenant, pool_id=pool["id"], flavor="g1.small")

    acme = [run("acme") for _ in range(3)]
    reservation = api.reservations.create(OP, tenant_id="acme", pool_id=pool["id"], gpus=1,
                                          duration="1h")  # fmt: skip
    real = {i["id"]: api.instances.show(OP, i["id"])["nodeId"] for i in acme}
    names = {node: name for name, node in hosts.items()}
    first = acme[0]["id"]
    api.instances.report_state(OP, host=names[real[first]], instance_id=first, state="ready")
    fleet.clock.advance(seconds=3600)  # type: ignore[attr-defined]
    run_vps_usage(fleet, fleet.now())
    enqueue(fleet, fleet.now())
    return {
        "pool": pool, "hosts": hosts, "acme": acme, "real": real, "reservation": reservation,
        "initech": run("initech"), "hostco": run("hostco"),
        "tokens": {(t, r): token(fleet, t, f"{t}-{r}", role=r)
                   for t in ("acme", "hostco") for r in ("admin", "member", "viewer")},
    }  # fmt: skip


@pytest.fixture
def world(fleet: Fleet) -> dict[str, Any]:
    return _world(fleet)


def _acme_reads(fleet: Fleet, credential: Any, tenant: str | None, pool: str) -> str:
    """Everything acme can read through the API, as one JSON text (what a role may not read is skipped)."""
    api = fleet.api
    reads = {
        "instances": lambda: api.instances.list(credential, tenant_id=tenant),
        "reservations": lambda: api.reservations.list(credential, tenant_id=tenant),
        "events": lambda: api.events.list(credential, tenant_id=tenant, limit=1000),
        "usage": lambda: api.usage.list(credential, tenant_id=tenant),
        "preview": lambda: api.capacity.preview(credential, tenant_id="acme", pool_id=pool,
                                                gpus=1, duration="1h"),  # fmt: skip
        "hooks": lambda: [api.webhooks.deliveries(credential, h["id"], tenant_id=tenant)
                          for h in api.webhooks.list(credential, tenant_id=tenant)["items"]],
    }  # fmt: skip
    answers: dict[str, Any] = {}
    for name, read in reads.items():
        try:
            answers[name] = read()
        except NotFoundError:
            raise
        except FleetError as exc:  # a role that may not read it reads nothing
            answers[name] = type(exc).__name__
    items = answers["instances"]["items"]
    answers["shown"] = [api.instances.show(credential, i["id"], tenant_id=tenant) for i in items]
    return json.dumps(answers)


@pytest.mark.parametrize("role", ["admin", "member", "viewer", "root-as-acme"])
def test_nothing_acme_reads_names_the_owners_hosts(
    fleet: Fleet, world: dict[str, Any], role: str
) -> None:
    if role == "root-as-acme":
        credential, tenant = OP, "acme"
    else:
        credential, tenant = world["tokens"][("acme", role)], None
    text = _acme_reads(fleet, credential, tenant, world["pool"]["id"])
    for name, node in world["hosts"].items():
        assert name not in text and node not in text
    assert HOST_ID_PREFIX in text


def test_acme_tells_which_of_its_instances_share_a_host(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    alice = world["tokens"][("acme", "admin")]
    seen = {i["id"]: i["nodeId"] for i in fleet.api.instances.list(alice)["items"]}
    assert all(node.startswith(HOST_ID_PREFIX) for node in seen.values())
    by_real: defaultdict[str, set[str]] = defaultdict(set)
    by_opaque: defaultdict[str, set[str]] = defaultdict(set)
    for instance_id, real in world["real"].items():
        by_real[real].add(instance_id)
        by_opaque[seen[instance_id]].add(instance_id)
    assert sorted(map(sorted, by_real.values())) == sorted(map(sorted, by_opaque.values()))
    assert max(len(group) for group in by_opaque.values()) >= 2  # three guests, two hosts
    for instance_id, real in world["real"].items():
        assert seen[instance_id] == guest_host_id("acme", real)


def test_another_tenant_has_other_ids_for_the_same_host(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    theirs = world["initech"]
    real = fleet.api.instances.show(OP, theirs["id"])["nodeId"]
    assert theirs["nodeId"] == guest_host_id("initech", real)
    assert theirs["nodeId"] != guest_host_id("acme", real)


def test_the_owner_and_root_see_real_ids_and_names(fleet: Fleet, world: dict[str, Any]) -> None:
    hosts = set(world["hosts"].values())
    owner = world["tokens"][("hostco", "admin")]
    own = fleet.api.instances.list(owner)["items"]
    assert [i["id"] for i in own] == [world["hostco"]["id"]] and own[0]["nodeId"] in hosts
    assert world["hostco"]["nodeId"] in hosts  # root acting as hostco: hostco's view
    assert {i["nodeId"] for i in fleet.api.instances.list(OP)["items"]} <= hosts
    rsv = fleet.api.reservations.get(OP, world["reservation"]["id"])
    assert set(rsv["nodeIds"]) <= hosts
    preview = fleet.api.capacity.preview(owner, tenant_id="hostco", pool_id=world["pool"]["id"],
                                         gpus=1, duration="1h")  # fmt: skip
    assert {(c["id"], c["name"]) for c in preview["candidates"]} <= {
        (node, name) for name, node in world["hosts"].items()
    }
    ready = fleet.api.events.list(OP, types=["instance.ready"])["items"]
    assert ready[0]["data"]["host"] in world["hosts"] and ready[0]["data"]["nodeId"] in hosts


def test_a_reservation_and_its_events_carry_the_guests_ids(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    alice = world["tokens"][("acme", "admin")]
    real = fleet.api.reservations.get(OP, world["reservation"]["id"])["nodeIds"]
    mine = [guest_host_id("acme", n) for n in real]
    assert world["reservation"]["nodeIds"] == mine  # root acting as acme: acme's view
    assert fleet.api.reservations.get(alice, world["reservation"]["id"])["nodeIds"] == mine
    placed = fleet.api.events.list(alice, types=["reservation.placed"])["items"]
    assert placed[0]["data"]["nodes"] == mine
    ready = fleet.api.events.list(alice, types=["instance.ready"])["items"]
    first = world["acme"][0]["id"]
    assert ready[0]["data"] == {"nodeId": guest_host_id("acme", world["real"][first])}
    with fleet.read() as session:  # what the webhook will POST
        sent = {d.event_type: d.payload for d in session.exec(select(WebhookDelivery)).all()}
    assert sent["reservation.placed"]["data"]["nodes"] == mine
    assert sent["instance.ready"]["data"] == ready[0]["data"]
    assert sent["reservation.placed"] == placed[0]  # the same JSON as events.list


def test_candidates_are_opaque_for_a_guest_and_match_its_placements(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    alice = world["tokens"][("acme", "member")]
    preview = fleet.api.capacity.preview(alice, tenant_id="acme", pool_id=world["pool"]["id"],
                                         gpus=1, duration="1h")  # fmt: skip
    assert preview["fits"] is True
    assert {c["id"] for c in preview["candidates"]} <= {
        guest_host_id("acme", n) for n in world["hosts"].values()
    }
    assert all(sorted(c) == ["id"] for c in preview["candidates"])


def test_an_opaque_id_opens_no_host(fleet: Fleet, world: dict[str, Any]) -> None:
    alice = world["tokens"][("acme", "admin")]
    opaque = fleet.api.instances.list(alice)["items"][0]["nodeId"]
    made_up = HOST_ID_PREFIX + "0" * 56
    answers = []
    for ref in (opaque, made_up, *world["hosts"].values(), *world["hosts"]):
        with pytest.raises(NotFoundError) as caught:
            fleet.api.hosts.show(alice, host=ref)
        answers.append((caught.value.code, str(caught.value).replace(ref, "REF")))
    assert len(set(answers)) == 1


def test_the_tenant_view_in_sql_on_both_engines(any_fleet: Fleet) -> None:
    """Owned hosts among many ids (past one IN list) are shown; everything else is not."""
    world = _world(any_fleet)
    hosts = sorted(world["hosts"].values())
    made_up = [f"node_{i:026d}" for i in range(CHUNK * 2 + 7)]
    with any_fleet.read() as session:
        owner = tenant_host_view(session, "hostco", [*made_up, *hosts, None])
        guest = tenant_host_view(session, "acme", [*made_up, *hosts])
    assert owner.shown == frozenset(hosts) and guest.shown == frozenset()
