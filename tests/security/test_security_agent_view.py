"""What a pool's owner and its host agent learn about the guests: what to run, never whose.

hostco owns a pool offered to acme. Through /v1/hosts/{host}/specs and
/v1/hosts/{host}/reservations, hostco read acme's instance names and reservation ids;
document 003: "Nothing a tenant can read reveals another tenant's reservation."
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.runner import Agent, AgentOptions
from bcfleet.domain.guest_view import GUEST_PREFIX, opaque_guest_id
from bcfleet.errors import NotFoundError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, inventory
from tests.support.fleet import run_cli
from tests.support.http import ApiClient, served
from tests.support.security_world import build_world


@pytest.fixture
def hostco(fleet: Fleet) -> Iterator[tuple[ApiClient, dict[str, Any], str]]:
    """hostco's admin over HTTP, the world, and the server's URL."""
    world = build_world(fleet)
    with served(fleet) as (server, root):
        yield root.as_(world["tokens"][("owner", "admin")]), world, server.url


def _secrets(world: dict[str, Any]) -> list[str]:
    """What the owner must not learn: acme's ids, names and the tenant itself."""
    acme = world["acme"]
    return [
        acme["instance"]["id"],
        acme["instance"]["name"],
        acme["reservation"]["id"],
        "acme",
    ]


def _assert_tells_nothing_of_acme(body: Any, world: dict[str, Any]) -> None:
    text = json.dumps(body)
    for secret in _secrets(world):
        assert secret not in text, f"told the pool's owner {secret!r}: {text[:300]}"


def test_the_owners_host_specs_say_what_to_run_not_whose(
    hostco: tuple[ApiClient, dict[str, Any], str],
) -> None:
    owner, world, _url = hostco
    answer = owner.get("/v1/hosts/shared-h1/specs")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    _assert_tells_nothing_of_acme(body, world)
    [guest] = body["items"]
    instance = world["acme"]["instance"]
    assert guest["id"] == opaque_guest_id(world["host"]["id"], instance["id"])
    assert guest["id"].startswith(GUEST_PREFIX) and "name" not in guest
    assert guest["shape"] == instance["shape"]
    assert guest["state"] == "running"
    assert set(guest) == {"id", "state", "shape", "placement", "balloon", "gpus"}
    assert guest["placement"]["cpuset"]  # where to run it
    assert owner.get("/v1/hosts/shared-h1/specs").json() == body  # the same id every pull


def test_the_owners_host_bookings_say_which_gpus_and_when_not_whose(
    hostco: tuple[ApiClient, dict[str, Any], str],
) -> None:
    owner, world, _url = hostco
    body = owner.get("/v1/hosts/shared-h1/reservations").json()
    _assert_tells_nothing_of_acme(body, world)
    [booking] = body["items"]
    reservation = world["acme"]["reservation"]
    assert booking["id"] == opaque_guest_id(world["host"]["id"], reservation["id"])
    assert set(booking) == {"id", "state", "spot", "gpus", "start", "end"}
    assert len(booking["gpus"]) == 1 and booking["gpus"][0].startswith("0000:")


def test_an_agent_reports_on_a_guest_by_the_id_it_was_given(
    fleet: Fleet, hostco: tuple[ApiClient, dict[str, Any], str]
) -> None:
    owner, world, _url = hostco
    instance = world["acme"]["instance"]
    guest = owner.get("/v1/hosts/shared-h1/specs").json()["items"][0]["id"]
    fake = "ins_" + "0" * 26
    answers = [
        owner.post(f"/v1/hosts/shared-h1/instances/{ref}/state", json={"state": "running"})
        for ref in (instance["id"], fake)
    ]
    # The owner cannot even confirm a guessed instance id: a real one answers as a made-up one.
    assert [a.status_code for a in answers] == [404, 404]
    texts = [
        a.text.replace(ref, "ID") for a, ref in zip(answers, (instance["id"], fake), strict=True)
    ]
    assert texts[0] == texts[1]
    reported = owner.post(f"/v1/hosts/shared-h1/instances/{guest}/state", json={"state": "ready"})
    assert reported.status_code == 200, reported.text
    assert reported.json() == {"id": guest, "state": "running", "readyAt": "2026-11-30T10:00:00Z"}
    assert fleet.api.instances.show(OP, instance["id"])["readyAt"] == "2026-11-30T10:00:00Z"
    other = opaque_guest_id("node_elsewhere", instance["id"])
    with pytest.raises(NotFoundError):
        fleet.api.instances.report_state(
            world["tokens"][("owner", "admin")], host="shared-h1", instance_id=other, state="ready"
        )


def test_roots_admin_still_sees_every_guest_by_name(
    hostco: tuple[ApiClient, dict[str, Any], str],
) -> None:
    owner, world, _url = hostco
    root = owner.as_(world["tokens"][("root", "admin")])
    [spec] = root.get("/v1/hosts/shared-h1/specs").json()["items"]
    assert (spec["id"], spec["name"]) == (world["acme"]["instance"]["id"], "acme-secret-vm")
    [booking] = root.get("/v1/hosts/shared-h1/reservations").json()["items"]
    assert (booking["reservationId"], booking["tenantId"]) == (
        world["acme"]["reservation"]["id"],
        "acme",
    )


def test_the_python_api_gives_the_owner_the_same_view(fleet: Fleet) -> None:
    world = build_world(fleet)
    owner = world["tokens"][("owner", "admin")]
    _assert_tells_nothing_of_acme(fleet.api.instances.specs_for_host(owner, "shared-h1"), world)
    _assert_tells_nothing_of_acme(fleet.api.reservations.for_host(owner, "shared-h1"), world)


def test_the_owners_agent_runs_guests_by_their_opaque_ids(
    fleet: Fleet, hostco: tuple[ApiClient, dict[str, Any], str]
) -> None:
    _owner, world, url = hostco
    connection = AgentConnection(url, world["tokens"][("owner", "admin")])
    options = AgentOptions("shared-h1", simulate=True, boot_seconds=0, rounds=2,
                           inventory=inventory(cpus=16, gpus=2))  # fmt: skip
    agent = Agent(connection, options)
    report = agent.run()
    connection.close()
    instance = world["acme"]["instance"]
    guest = opaque_guest_id(world["host"]["id"], instance["id"])
    assert agent.hypervisor is not None and list(agent.hypervisor.guests) == [guest]
    assert (guest, "ready") in report.states
    _assert_tells_nothing_of_acme(report.to_json(), world)
    assert fleet.api.instances.show(OP, instance["id"])["readyAt"] is not None


def test_fleet_agent_run_writes_the_owners_domains_under_opaque_ids(
    fleet: Fleet, sqlite_url: str, hostco: tuple[ApiClient, dict[str, Any], str], tmp_path: Path
) -> None:
    _owner, world, url = hostco
    domains = tmp_path / "domains"
    inventory_file = tmp_path / "inventory.json"
    inventory_file.write_text(json.dumps(inventory(cpus=16, gpus=2)))
    result = run_cli("agent", "run", "--server", url, "--token", world["tokens"][("owner", "admin")],
                     "--host", "shared-h1", "--rounds", "1", "--domains", str(domains),
                     "--inventory-file", str(inventory_file), "--json", db=sqlite_url)  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    guest = opaque_guest_id(world["host"]["id"], world["acme"]["instance"]["id"])
    [written] = list(domains.iterdir())
    assert written.name == f"{guest}.xml"
    xml = written.read_text()
    assert f"<name>{guest}</name>" in xml
    for secret in _secrets(world):
        assert secret not in xml + result.stdout
    fleet.api.instances.delete(OP, world["acme"]["instance"]["id"])
    again = run_cli("agent", "run", "--server", url, "--token", world["tokens"][("owner", "admin")],
                    "--host", "shared-h1", "--rounds", "1", "--domains", str(domains),
                    "--inventory-file", str(inventory_file), db=sqlite_url)  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert list(domains.iterdir()) == []  # the gone guest's domain is removed
