"""One tenant's damaged rows stay its own: every job and listing reads stored JSON through one
guarded decoder (bcfleet/store/stored_json.py).

Each test writes one hostile document straight into a row of acme's, as a hand-edited or
damaged database would hold it, and runs one reader over the whole fleet: the webhooks job
still delivers globex's events and records a fault on acme's row; root's event list answers
200 with the row marked; the metrics tally goes on; root's instance list shows the row
marked; `fleet doctor --invariants` reports it as a finding. Text that is not JSON at all
can only be stored on SQLite (PostgreSQL's json type refuses it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.fleet import Fleet
from bcfleet.http.metrics import EventTally, Metrics
from bcfleet.jobs.webhooks import JOB, UNREADABLE_PAYLOAD, enqueue
from tests.support.builders import OP
from tests.support.capacity import create, pool_with_hosts, small_flavor
from tests.support.fleet import run_cli
from tests.support.http import served
from tests.support.security import LOOPBACK, Capture, allow_egress, capturing_server

NOT_JSON = "{not json"
DOCUMENTS = [
    pytest.param("[1,2,3]", id="list"),
    pytest.param('"x"', id="string"),
    pytest.param(NOT_JSON, id="not-json"),
]


def hostile(fleet: Fleet, table: str, column: str, key: str, row_id: Any, value: str) -> None:
    """Write a document straight into one row, past every check of the API."""
    if value == NOT_JSON and fleet.engine.dialect.name == "postgresql":
        pytest.skip("PostgreSQL's json type refuses text that is not JSON")
    with fleet.engine.begin() as connection:
        connection.execute(
            text(f"UPDATE {table} SET {column} = :value WHERE {key} = :id"),  # noqa: S608
            {"value": value, "id": row_id},
        )


def pool_event(fleet: Fleet, tenant: str) -> dict[str, Any]:
    """Create a pool of the tenant's; its pool.created event."""
    fleet.api.pools.create(OP, tenant_id=tenant, name=f"{tenant}-pool", kind="vps-host")
    return fleet.api.events.list(OP, tenant_id=tenant, types=["pool.created"])["items"][-1]


def doctor(fleet: Fleet, *args: str) -> tuple[int, dict[str, Any], str]:
    shown = run_cli("doctor", "--json", *args, db=fleet.settings.db_url)
    body = shown.json()
    assert isinstance(body, dict)
    return shown.exit_code, body, shown.stderr


def faults_named(fleet: Fleet) -> list[tuple[str, str, str | None]]:
    _, body, _ = doctor(fleet)
    return [
        (w["kind"], w["id"], w["tenant"]) for w in body["warnings"] if w["code"] == f"{JOB}.failed"
    ]


@pytest.fixture
def webhook_world(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Fleet, Capture]]:
    """acme and globex, each with a webhook to one receiver on 127.0.0.1."""
    monkeypatch.setenv("BCFLEET_EGRESS_ALLOW", LOOPBACK)  # the CLI's fleet
    allow_egress(any_fleet)
    with capturing_server() as receiver:
        for tenant in ("acme", "globex"):
            any_fleet.api.tenants.create(OP, tenant)
            any_fleet.api.webhooks.create(OP, tenant_id=tenant, url=receiver.url + f"/{tenant}")
        yield any_fleet, receiver


def sent_to(receiver: Capture, tenant: str) -> list[str]:
    """The ids of the events the receiver got on the tenant's webhook."""
    import json

    with receiver.lock:
        return [
            json.loads(r["body"])["event"]["id"]
            for r in receiver.requests
            if r["path"] == f"/{tenant}"
        ]


def tick(fleet: Fleet) -> None:
    """`fleet jobs tick --job webhooks` as cron runs it: it exits 0, with no traceback."""
    ran = run_cli("jobs", "tick", "--job", "webhooks", db=fleet.settings.db_url)
    assert ran.exit_code == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    assert "webhooks" in ran.stdout and " ok " in ran.stdout


# ----- the webhooks job -------------------------------------------------------------------------


@pytest.mark.parametrize("value", DOCUMENTS)
def test_a_bad_event_of_acme_is_a_fault_and_globex_events_are_delivered(
    webhook_world: tuple[Fleet, Capture], value: str
) -> None:
    fleet, receiver = webhook_world
    bad = pool_event(fleet, "acme")
    fleet.api.flavors.create(
        OP, tenant_id="acme", pool_id="acme-pool", name="f1", vcpu=1, memory_gib=1, disk_gib=1
    )
    globex = pool_event(fleet, "globex")
    hostile(fleet, "events", "data", "id", bad["id"], value)

    tick(fleet)

    assert sent_to(receiver, "globex") == [globex["id"]]
    assert len(sent_to(receiver, "acme")) == 1  # acme's readable event still goes out
    assert bad["id"] not in sent_to(receiver, "acme")
    assert faults_named(fleet) == [("event", bad["id"], "acme")]

    hostile(fleet, "events", "data", "id", bad["id"], '{"name": "acme-pool"}')
    tick(fleet)  # mended: the fault is forgotten (the webhook's cursor has passed the event)
    assert faults_named(fleet) == []


def test_a_bad_delivery_payload_is_a_failed_try_and_the_others_are_sent(
    webhook_world: tuple[Fleet, Capture],
) -> None:
    fleet, receiver = webhook_world
    pool_event(fleet, "acme")
    globex = pool_event(fleet, "globex")
    enqueue(fleet, fleet.now())
    hook = fleet.api.webhooks.list(OP, tenant_id="acme")["items"][0]
    (delivery,) = fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    hostile(fleet, "webhook_deliveries", "payload", "id", delivery["id"], "[1]")

    tick(fleet)

    assert sent_to(receiver, "globex") == [globex["id"]]
    assert sent_to(receiver, "acme") == []
    (failed,) = fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    assert (failed["state"], failed["attempts"]) == ("pending", 1)
    assert failed["lastError"] == UNREADABLE_PAYLOAD
    assert faults_named(fleet) == [("delivery", str(delivery["id"]), "acme")]


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("[1]", id="list-of-numbers"),
        pytest.param('"pool.*"', id="string"),
        pytest.param(NOT_JSON, id="not-json"),
    ],
)
def test_a_bad_webhook_of_acme_is_a_fault_and_globex_events_are_delivered(
    webhook_world: tuple[Fleet, Capture], value: str
) -> None:
    fleet, receiver = webhook_world
    hook = fleet.api.webhooks.list(OP, tenant_id="acme")["items"][0]
    pool_event(fleet, "acme")
    globex = pool_event(fleet, "globex")
    hostile(fleet, "webhooks", "event_types", "id", hook["id"], value)

    tick(fleet)

    assert sent_to(receiver, "globex") == [globex["id"]]
    assert sent_to(receiver, "acme") == []
    assert faults_named(fleet) == [("webhook", hook["id"], "acme")]

    hostile(fleet, "webhooks", "event_types", "id", hook["id"], "[]")
    tick(fleet)  # mended: acme's event goes out, and the fault is cleared
    assert len(sent_to(receiver, "acme")) == 1
    assert faults_named(fleet) == []


# ----- the event list and the metrics tally -------------------------------------------------------


@pytest.mark.parametrize("value", DOCUMENTS)
def test_root_lists_every_event_with_the_bad_one_marked(any_fleet: Fleet, value: str) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    any_fleet.api.tenants.create(OP, "globex")
    bad = pool_event(any_fleet, "acme")
    globex = pool_event(any_fleet, "globex")
    hostile(any_fleet, "events", "data", "id", bad["id"], value)

    with served(any_fleet) as (_, client):
        answer = client.get("/v1/events", params={"limit": 1000})
        assert answer.status_code == 200, answer.text
        items = {e["id"]: e for e in answer.json()["items"]}
        acme = client.get("/v1/events", params={"tenant": "acme"})
        assert acme.status_code == 200, acme.text
    assert (items[bad["id"]]["data"], items[bad["id"]]["unreadable"]) == ({}, ["data"])
    assert items[globex["id"]]["data"] == {"name": "globex-pool"}
    assert "unreadable" not in items[globex["id"]]

    metrics = Metrics()
    tally = EventTally(
        metrics, lambda after: any_fleet.api.events.list(OP, after=after, limit=1000)
    )
    assert tally.collect() == len(items)
    assert metrics.events_by_type["pool.created"] == 2


# ----- the instance list and doctor --invariants --------------------------------------------------

INSTANCE_DOCUMENTS = [
    pytest.param(column, value, field, id=f"{column}-{mark.id}")
    for column, field in (("shape", "shape"), ("host_placement", "hostPlacement"))
    for mark in DOCUMENTS
    for value in mark.values
]


@pytest.fixture
def two_instances(any_fleet: Fleet) -> tuple[Fleet, dict[str, Any], dict[str, Any]]:
    """acme's placed instance and globex's, on one host of root's pool."""
    pool = pool_with_hosts(any_fleet, 1)
    any_fleet.api.tenants.create(OP, "globex")
    any_fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="globex")
    small_flavor(any_fleet, pool)
    acme, globex = (
        create(any_fleet, pool, "g1.small"),
        create(any_fleet, pool, "g1.small", "globex"),
    )
    assert acme["hostPlacement"] and globex["hostPlacement"]
    return any_fleet, acme, globex


@pytest.mark.parametrize(("column", "value", "field"), INSTANCE_DOCUMENTS)
def test_root_lists_every_instance_with_the_bad_one_marked(
    two_instances: tuple[Fleet, dict[str, Any], dict[str, Any]], column: str, value: str, field: str
) -> None:
    fleet, acme, globex = two_instances
    hostile(fleet, "instances", column, "id", acme["id"], value)

    listed = run_cli("instances", "list", "--json", db=fleet.settings.db_url)
    assert listed.exit_code == 0, listed.stderr
    items = {i["id"]: i for i in listed.json()["items"]}  # type: ignore[index]
    assert items[acme["id"]]["unreadable"] == [field]
    assert items[acme["id"]].get(field, {}) == {}
    assert items[globex["id"]]["shape"] == globex["shape"]
    assert items[globex["id"]]["hostPlacement"] == globex["hostPlacement"]
    assert "unreadable" not in items[globex["id"]]
    assert fleet.api.instances.show(OP, acme["id"])["unreadable"] == [field]
    table = run_cli("instances", "list", db=fleet.settings.db_url)
    assert table.exit_code == 0 and acme["id"] in table.stdout, table.stderr
    shown = run_cli("instances", "show", acme["id"], db=fleet.settings.db_url)
    assert shown.exit_code == 0, shown.stderr
    assert f"unreadable: {field} (shown empty)" in shown.stdout


@pytest.mark.parametrize(("column", "value", "field"), INSTANCE_DOCUMENTS)
def test_doctor_reports_a_bad_instance_as_a_finding(
    two_instances: tuple[Fleet, dict[str, Any], dict[str, Any]], column: str, value: str, field: str
) -> None:
    fleet, acme, globex = two_instances
    del field
    hostile(fleet, "instances", column, "id", acme["id"], value)

    code, body, stderr = doctor(fleet, "--invariants")

    assert code == 1 and "Traceback" not in stderr
    problems = body["invariants"]["problems"]
    assert [p for p in problems["readableDocuments"] if acme["id"] in p] != []
    assert not [p for name in problems for p in problems[name] if globex["id"] in p]
    shown = run_cli("doctor", "--invariants", db=fleet.settings.db_url)
    assert shown.exit_code == 1 and "FAIL readableDocuments" in shown.stdout
    assert "Traceback" not in shown.stderr
