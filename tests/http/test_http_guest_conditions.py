"""What a host agent reports beyond states: its guests' conditions and balloons and the host's
health, over HTTP with an agent token bound to its host; shown in instances and hosts, to
each reader as far as it may see; refused for a guest of another host, and changing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.domain.bounds import AGENT_CONDITIONS_MAX, AGENT_MESSAGE_MAX
from bcfleet.domain.guest_view import opaque_guest_id
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.models import Instance
from tests.support.builders import OP, hosted_pool, inventory, token
from tests.support.fleet import run_cli
from tests.support.http import PLACEMENT, ApiClient, error_code, served

SHORTFALL = {
    "type": "StartRefused",
    "reason": "NotEnoughHugepages",
    "message": "huge pages: needs 512 × 2MiB pages on NUMA node 0, 100 free",
}
CRASHED = {"type": "StoppedOutside", "reason": "Crashed", "message": "the guest crashed"}
DEGRADED = {"state": "degraded", "message": "libvirt unreachable, retrying in 4 s"}


def two_hosts(fleet: Fleet) -> dict[str, Any]:
    """acme's guest `a` on fra-01 and `b` on fra-02 (fra-01 drained before b was made)."""
    pool = hosted_pool(fleet)
    fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="g1.small", vcpu=2,
                             memory_gib=4, disk_gib=40)  # fmt: skip
    hosts, made = {}, {}
    for name, guest in (("fra-01", "a"), ("fra-02", "b")):
        hosts[name] = fleet.api.hosts.adopt(
            OP, tenant_id="root", pool=pool["id"], name=name, labels=PLACEMENT
        )
        fleet.api.hosts.report(OP, host=name, inventory=inventory())
        run_vps_hosts(fleet, fleet.now())
        made[guest] = fleet.api.instances.create(
            OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small"
        )
        fleet.api.hosts.set_state(OP, host=name, draining=True)
        (spec,) = fleet.api.instances.specs_for_host(OP, name)["items"]
        assert spec["id"] == made[guest]["id"]
    agent = fleet.api.iam.create_token(
        OP, tenant_id="root", name="fra-01-agent", role="agent", host="fra-01"
    )["token"]
    return {**made, "hosts": hosts, "agent": agent}


def report(client: ApiClient, host: str, body: dict[str, Any]) -> Any:
    return client.post(f"/v1/hosts/{host}/guests/report", json=body)


def agent_conditions(fleet: Fleet, instance_id: str) -> tuple[list[Any], int | None]:
    shown = fleet.api.instances.show(OP, instance_id)
    return shown.get("agentConditions", []), shown.get("balloonBytes")


def test_an_agent_reports_its_guests_conditions_and_balloon_and_its_hosts_health(
    any_fleet: Fleet,
) -> None:
    fleet = any_fleet
    made = two_hosts(fleet)
    a = made["a"]
    with served(fleet) as (_server, root):
        agent = root.as_(made["agent"])
        (spec,) = agent.get("/v1/hosts/fra-01/specs").json()["items"]
        guest = spec["id"]
        assert guest.startswith("gst_")  # an agent token knows its guests by opaque ids

        answer = report(agent, "fra-01", {
            "health": DEGRADED,
            "guests": [{"id": guest, "conditions": [SHORTFALL], "balloonBytes": 3 << 30}],
        })  # fmt: skip
        assert answer.status_code == 200, answer.text
        assert answer.json()["guests"] == [
            {"id": guest, "conditions": [SHORTFALL], "balloonBytes": 3 << 30}
        ]
        conditions, balloon = agent_conditions(fleet, a["id"])
        assert [{k: c[k] for k in SHORTFALL} for c in conditions] == [SHORTFALL]
        assert conditions[0]["lastTransitionTime"] == "2026-11-30T10:00:00Z"
        assert balloon == 3 << 30
        assert fleet.api.instances.show(OP, a["id"])["conditions"] == []  # the server's own

        host = root.get("/v1/hosts/fra-01").json()
        assert host["health"] == {**DEGRADED, "at": "2026-11-30T10:00:00Z"}
        assert host["status"] == "draining, degraded"
        listed = {h["name"]: h for h in root.get("/v1/hosts").json()["items"]}
        assert listed["fra-01"]["status"] == "draining, degraded"
        assert "health" not in listed["fra-02"] and listed["fra-02"]["status"] == "draining"

        # acme, whose guest it is, sees the condition; its host stays an opaque id
        viewer = root.as_(token(fleet, "acme", "acme-viewer", role="viewer"))
        seen = viewer.get(f"/v1/instances/{a['id']}").json()
        assert [c["reason"] for c in seen["agentConditions"]] == ["NotEnoughHugepages"]
        assert seen["balloonBytes"] == 3 << 30
        assert seen["nodeId"] != made["hosts"]["fra-01"]["id"]
        assert error_code(viewer.get("/v1/hosts/fra-01")) == "NOT_FOUND"
        listed_by_acme = viewer.get("/v1/instances").json()["items"]
        assert {i["id"]: i.get("agentConditions") for i in listed_by_acme}[a["id"]] == conditions

        # the next report replaces the guest's conditions as a whole; the host is ok again
        again = report(agent, "fra-01", {
            "health": {"state": "ok"},
            "guests": [{"id": guest, "conditions": [CRASHED], "balloonBytes": None}],
        })  # fmt: skip
        assert again.status_code == 200, again.text
        conditions, balloon = agent_conditions(fleet, a["id"])
        assert ([c["type"] for c in conditions], balloon) == (["StoppedOutside"], None)
        assert root.get("/v1/hosts/fra-01").json()["status"] == "draining"
        cleared = report(agent, "fra-01", {"guests": [{"id": guest, "conditions": []}]})
        assert cleared.status_code == 200, cleared.text
        assert agent_conditions(fleet, a["id"]) == ([], None)
        assert root.get("/v1/hosts/fra-01").json()["health"]["state"] == "ok"  # kept: not sent


def test_a_guest_of_another_host_is_refused_and_the_report_changes_nothing(
    any_fleet: Fleet,
) -> None:
    fleet = any_fleet
    made = two_hosts(fleet)
    a, b = made["a"], made["b"]
    with served(fleet) as (_server, root):
        agent = root.as_(made["agent"])
        (spec,) = agent.get("/v1/hosts/fra-01/specs").json()["items"]
        on_b = opaque_guest_id(made["hosts"]["fra-02"]["id"], b["id"])
        for other in (on_b, b["id"]):
            answer = report(agent, "fra-01", {
                "health": DEGRADED,
                "guests": [{"id": spec["id"], "conditions": [CRASHED]},
                           {"id": other, "conditions": [CRASHED]}],
            })  # fmt: skip
            assert (answer.status_code, error_code(answer)) == (404, "NOT_FOUND"), other
        assert agent_conditions(fleet, a["id"]) == ([], None)
        assert "health" not in root.get("/v1/hosts/fra-01").json()

        body = {"guests": [{"id": on_b, "conditions": [CRASHED]}]}
        assert error_code(report(agent, "fra-02", body)) == "FORBIDDEN"
        assert agent_conditions(fleet, b["id"]) == ([], None)


def test_the_agents_conditions_and_the_servers_stay_apart(fleet: Fleet) -> None:
    made = two_hosts(fleet)
    a = made["a"]
    server_condition = {"type": "PlacementDegraded", "status": "True", "reason": "NumaSpread",
                        "message": "spread", "lastTransitionTime": "2026-11-30T09:00:00Z"}  # fmt: skip
    with fleet.write() as session:
        row = session.get(Instance, a["id"])
        assert row is not None
        row.conditions = [server_condition]
        session.add(row)
    fleet.api.hosts.report_guests(
        OP, host="fra-01", guests=[{"id": a["id"], "conditions": [CRASHED]}]
    )
    shown = fleet.api.instances.show(OP, a["id"])
    assert shown["conditions"] == [server_condition]
    assert [c["type"] for c in shown["agentConditions"]] == ["StoppedOutside"]

    text = run_cli("instances", "show", a["id"], db=fleet.settings.db_url)
    assert "StoppedOutside: Crashed: the guest crashed" in text.stdout
    assert "PlacementDegraded: NumaSpread: spread" in text.stdout
    listed = run_cli("instances", "list", db=fleet.settings.db_url)
    assert "StoppedOutside: the guest crashed" in listed.stdout
    fleet.api.hosts.report_guests(OP, host="fra-01", health=DEGRADED)
    hosts = run_cli("hosts", "list", db=fleet.settings.db_url)
    assert "draining, degraded" in hosts.stdout
    host = run_cli("hosts", "show", "--host", "fra-01", db=fleet.settings.db_url)
    assert f"health:    degraded since 2026-11-30T10:00:00Z: {DEGRADED['message']}" in host.stdout


TOO_LONG = "x" * (AGENT_MESSAGE_MAX + 1)


def test_a_degraded_host_may_say_why_or_not(fleet: Fleet) -> None:
    two_hosts(fleet)
    fleet.api.hosts.report_guests(OP, host="fra-01", health={"state": "degraded", "message": None})
    host = fleet.api.hosts.show(OP, host="fra-01")
    assert (host["status"], host["health"]["message"]) == ("draining, degraded", None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"guests": [{"id": "G", "conditions": [{**CRASHED, "message": TOO_LONG}]}]},
                     "guests[0].conditions[0].message", id="message-too-long"),
        pytest.param({"guests": [{"id": "G", "conditions": [CRASHED] * (AGENT_CONDITIONS_MAX + 1)}]},
                     "guests[0].conditions", id="too-many-conditions"),
        pytest.param({"guests": [{"id": "G", "conditions": [CRASHED, CRASHED]}]},
                     "guests[0].conditions", id="a-type-twice"),
        pytest.param({"guests": [{"id": "G", "conditions": [{**CRASHED, "type": "not a word"}]}]},
                     "guests[0].conditions[0].type", id="type-not-a-word"),
        pytest.param({"guests": [{"id": "G", "conditions": [{**CRASHED, "message": "a\nb"}]}]},
                     "guests[0].conditions[0].message", id="message-with-a-newline"),
        pytest.param({"guests": [{"id": "G", "balloonBytes": -1}]},
                     "guests[0].balloonBytes", id="negative-balloon"),
        pytest.param({"health": {"state": "sad"}}, "health.state", id="unknown-health"),
        pytest.param({"health": {"state": "degraded", "message": "a\nb"}}, "health.message",
                     id="health-message-with-a-newline"),
        pytest.param({"guests": [{"id": "G"}, {"id": "G"}]}, "guests", id="a-guest-twice"),
    ],
)  # fmt: skip
def test_a_report_out_of_bounds_is_invalid_input_and_changes_nothing(
    fleet: Fleet, body: dict[str, Any], field: str
) -> None:
    made = two_hosts(fleet)
    a = made["a"]
    for guest in body.get("guests", []):
        guest["id"] = a["id"]
    with pytest.raises(InvalidInputError) as raised:
        fleet.api.hosts.report_guests(OP, host="fra-01", **body)
    assert raised.value.details["field"] == field
    assert agent_conditions(fleet, a["id"]) == ([], None)
    with served(fleet) as (_server, root):
        answer = report(root, "fra-01", body)
        assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
