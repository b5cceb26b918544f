"""The typed documents and the OpenAPI schemas generated from them: same keys, same required keys,
and every answer the API renders for those objects validates against its schema."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NotRequired, TypedDict, get_type_hints

import pytest
from jsonschema import Draft202012Validator

from bcfleet.domain.compute_settings import ComputeChange
from bcfleet.fleet import Fleet
from bcfleet.http.app import openapi_document
from bcfleet.http.typed_schemas import component_name, document_schema, generated_documents
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.job_faults import upsert_fault
from tests.support import metering as mb
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.fleet import T0
from tests.support.security_world import build_world

COMPONENTS = openapi_document()["components"]
DOCUMENTS = generated_documents()


JSON_TYPES = (str, int, float, bool, type(None), list, dict)


def _not_plain_json(body: Any, path: str = "$") -> list[str]:
    """Values of any other type than JSON's own, such as a state left as its enum member: the
    Python API answers documents a YAML or JSON writer takes as they are."""
    if isinstance(body, dict):
        return [p for k, v in body.items() for p in _not_plain_json(v, f"{path}/{k}")]
    if isinstance(body, list):
        return [p for i, v in enumerate(body) for p in _not_plain_json(v, f"{path}/{i}")]
    return [] if type(body) in JSON_TYPES else [f"{path}: a {type(body).__name__}, not JSON"]


def _problems(component: str, body: Any) -> list[str]:
    schema = {"$ref": f"#/components/schemas/{component}", "components": COMPONENTS}
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return sorted(
        [
            f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
            for e in validator.iter_errors(body)
        ]
        + _not_plain_json(body)
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=component_name)
def test_the_schema_has_the_documents_keys_and_required_keys(document: type[Any]) -> None:
    schema = COMPONENTS["schemas"][component_name(document)]
    assert set(schema["properties"]) == set(get_type_hints(document))
    assert set(schema["required"]) == set(document.__required_keys__)
    assert schema["additionalProperties"] is False


def test_every_document_of_the_api_has_its_schema() -> None:
    from typing import is_typeddict

    from bcfleet.api import documents

    not_served = {
        documents.HostFieldsJson,  # the fields the host documents extend
        documents.JobStatusJson,  # extended by Job
        documents.MeterJson,  # the meters are the CLI's, no route serves them
        documents.MeterPageJson,
    }
    typed = {
        value
        for name, value in vars(documents).items()
        if name.endswith("Json") and is_typeddict(value)
    }
    missing = typed - not_served - set(DOCUMENTS)
    assert typed and not missing, sorted(t.__name__ for t in missing)


def test_two_documents_cannot_claim_one_component() -> None:
    from bcfleet.http.typed_schemas import document_schemas

    class TenantJson(TypedDict):  # another type under the name of the API's Tenant
        id: str

    with pytest.raises(TypeError, match="are both Tenant"):
        document_schemas((TenantJson,))


def test_the_bounds_the_rules_say_are_kept_over_the_types() -> None:
    pool = COMPONENTS["schemas"]["Pool"]["properties"]
    assert pool["kind"]["enum"] == ["vps-host", "provider"]
    flavor_shape = COMPONENTS["schemas"]["Flavor"]["properties"]["vcpu"]
    assert (flavor_shape["minimum"], flavor_shape["maximum"]) == (0, 1_000_000)
    hugepages = COMPONENTS["schemas"]["FlavorPlacement"]["properties"]["hugepageSizeBytes"]
    assert 1073741824 in hugepages["anyOf"][0]["enum"]
    host_state = COMPONENTS["schemas"]["Host"]["properties"]["state"]
    assert host_state == {"type": "string", "enum": ["ready", "draining"]}
    assert COMPONENTS["schemas"]["GpuCount"]["properties"]["used"]["maximum"] == 2**31 - 1


def test_a_type_without_a_json_schema_is_refused() -> None:
    from typing import TypedDict

    class BadJson(TypedDict):
        when: complex

    with pytest.raises(TypeError, match="no JSON schema"):
        document_schema(BadJson)
    with pytest.raises(KeyError, match="no fields"):
        document_schema(DOCUMENTS[0], {"nosuch": {"type": "string"}})


def test_an_optional_key_written_under_postponed_annotations_is_refused() -> None:
    """This module postpones its annotations: Python 3.11 would count ``note`` as required."""

    class NoteJson(TypedDict):
        id: str
        note: NotRequired[str]

    if "note" in NoteJson.__required_keys__:
        with pytest.raises(TypeError, match="NotRequired but counted as required"):
            document_schema(NoteJson)
    else:  # a Python that reads it right: the schema leaves it optional
        assert document_schema(NoteJson)["required"] == ["id"]


def test_every_answer_for_the_typed_objects_validates(fleet: Fleet) -> None:
    api = fleet.api
    answers: list[tuple[str, Any]] = []
    pool = hosted_pool(fleet, "vps-fra", offered_to=("acme",), overcommit={"vcpu": 2.0})
    answers.append(("Pool", pool))
    assert pool["offeredTo"] == ["acme"] and pool["gpuModel"] == "L40S"
    answers += [("Tenant", t) for t in api.tenants.list(OP)["items"]]
    answers.append(("Tenant", api.tenants.update(OP, "acme", name="Acme")))
    answers.append(
        ("Principal", api.iam.create_principal(OP, tenant_id="acme", name="ops", role="viewer"))
    )
    made = api.iam.create_token(OP, tenant_id="acme", name="ci", expires_in="30d")
    answers.append(("Token", made))
    rotated = api.iam.rotate_token(OP, tenant_id="acme", token_id=made["id"])
    assert rotated["replaces"] == made["id"] and rotated["expiresAt"] is not None
    answers.append(("Token", rotated))
    tokens = api.iam.list_tokens(OP, tenant_id="acme")["items"]
    assert sorted(t["state"] for t in tokens) == ["active", "revoked"]
    answers += [("TokenInfo", t) for t in tokens]
    hook = api.webhooks.create(OP, tenant_id="acme", url="https://93.184.216.34/hook")
    assert hook["secret"].startswith("whsec_")
    answers.append(("WebhookCreated", hook))
    shown_hook = api.webhooks.show(OP, hook["id"], tenant_id="acme")
    assert "secret" not in shown_hook
    answers.append(("Webhook", shown_hook))
    answers += [("Webhook", h) for h in api.webhooks.list(OP, tenant_id="acme")["items"]]
    account = api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN"
    )
    assert account["hasToken"] is False and account["endpoint"] is None
    answers.append(("ProviderAccount", account))
    listed_accounts = api.provider_accounts.list(OP, tenant_id="root")["items"]
    answers += [("ProviderAccount", a) for a in listed_accounts]
    quota = api.quotas.set(OP, tenant_id="acme", pool="vps-fra", limits={"vcpu": 8})
    assert quota["limits"] == {"vcpu": 8} and quota["used"]["vcpu"] == 0
    answers.append(("Quota", quota))
    answers += [("Quota", q) for q in api.quotas.show(OP, tenant_id="acme")["items"]]
    answers += [("Pool", p) for p in api.pools.list(OP, tenant_id="root")["items"]]
    answers.append(("Pool", api.pools.show(OP, tenant_id="root", pool="vps-fra")))
    answers.append(
        ("Pool", api.pools.update(OP, tenant_id="root", pool="vps-fra", host_reserve={"vcpu": 1}))
    )
    placed = flavor(
        fleet,
        pool["id"],
        "g1.pinned",
        placement={"numaAffine": True, "pinned": True, "hugepageSizeBytes": 1073741824},
    )
    assert placed["placement"]["pinned"] is True
    answers.append(("Flavor", placed))
    answers.append(("Flavor", flavor(fleet, pool["id"], "g1.small")))
    many = api.flavors.create_many(
        OP,
        tenant_id="root",
        pool_id=pool["id"],
        flavors=[{"name": "g1.bulk", "vcpu": 1, "memory_gib": 2, "disk_gib": 10}],
    )
    answers += [("Flavor", f) for f in many["items"]]
    answers += [
        ("Flavor", f) for f in api.flavors.list(OP, tenant_id="root", pool_id=pool["id"])["items"]
    ]
    adopted = host(fleet, pool["id"], "h1")
    assert adopted["status"] == "ready, no inventory" and adopted["inventoryReportedAt"] is None
    answers.append(("Host", adopted))
    reported = host(fleet, pool["id"], "h2", inventory(cpus=8, gpus=1))
    assert reported["status"] == "ready" and reported["inventoryReportedAt"] is not None
    answers.append(("Host", reported))
    run_vps_hosts(fleet, fleet.now())  # derives the hosts' resources from their inventories
    drained = api.hosts.set_state(OP, host="h2", draining=True)
    assert drained["state"] == "draining" and drained["resources"]
    answers.append(("Host", drained))
    listed = api.hosts.list(OP)["items"]
    assert [h["name"] for h in listed] == ["h1", "h2"]
    assert listed[1]["gpus"] == {"total": 1, "used": 0}
    # 8 CPUs, 1 held back by the pool's host reserve, overcommitted 2:1
    assert {r["resource"]: r["capacity"] for r in listed[1]["resources"]}["vcpu"] == (8 - 1) * 2
    answers += [("HostListItem", h) for h in listed]
    shown = api.hosts.show(OP, host="h2")
    assert shown["inventory"] is not None and shown["degradedGuests"] == 0
    answers.append(("HostDetail", shown))
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_instances_and_guests_validates(fleet: Fleet) -> None:
    api = fleet.api
    world = build_world(fleet)
    owner = world["tokens"][("owner", "admin")]
    made = world["acme"]["instance"]
    assert made["nodeId"] is not None and made["flavor"] == "g1.small"
    answers: list[tuple[str, Any]] = [("Instance", made)]
    api.flavors.create(
        OP,
        tenant_id="hostco",
        pool_id="shared",
        name="g1.huge",
        vcpu=512,
        memory_gib=4,
        disk_gib=40,
    )
    pending = api.instances.create(OP, tenant_id="acme", pool_id="shared", flavor="g1.huge")
    assert pending["state"] == "pending" and pending["nodeId"] is None and pending["conditions"]
    answers.append(("Instance", pending))
    keyed = api.instances.create(
        OP, tenant_id="acme", pool_id="shared", flavor="g1.small", idempotency_key="k1"
    )
    assert keyed["idempotencyKey"] == "k1"
    answers.append(("Instance", keyed))
    stopped = api.instances.stop(OP, made["id"])
    answers.append(("Instance", stopped))
    resized = api.instances.resize(OP, made["id"], flavor="g1.medium")
    assert resized["flavor"] == "g1.medium" and resized["hostPlacement"]
    answers.append(("Instance", resized))
    answers.append(("Instance", api.instances.start(OP, made["id"])))
    guest = api.instances.specs_for_host(owner, "shared-h1")["items"][0]["id"]
    reported = api.instances.report_state(owner, host="shared-h1", instance_id=guest, state="ready")
    assert set(reported) == {"id", "state", "readyAt"} and reported["readyAt"] is not None
    answers += [("GuestState", reported), ("GuestReport", reported)]
    as_root = api.instances.report_state(
        OP, host="shared-h1", instance_id=made["id"], state="ready"
    )
    assert as_root["id"] == made["id"] and "readyAt" in as_root
    answers += [("Instance", as_root), ("GuestReport", as_root)]
    answers.append(("Instance", api.instances.show(OP, made["id"])))
    answers.append(("InstancePage", api.instances.list(OP, tenant_id="acme")))
    limited = api.instances.list(OP, limit=1)
    assert limited["total"] == 3 and limited["items"][0]["state"] == "pending"
    answers.append(("InstancePage", limited))
    deleted = api.instances.delete(OP, pending["id"])
    assert "deletedAt" in deleted
    answers.append(("Instance", deleted))
    answers.append(("InstancePage", api.instances.list(OP, include_deleted=True)))
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_the_host_agents_views_and_previews_validates(fleet: Fleet) -> None:
    api = fleet.api
    world = build_world(fleet)
    owner = world["tokens"][("owner", "admin")]
    offered = world["tokens"][("offered", "admin")]
    api.reservations.create(OP, tenant_id="initech", pool_id="shared", gpus=1, duration="1h",
                            spot=True)  # fmt: skip
    answers: list[tuple[str, Any]] = []
    specs = api.instances.specs_for_host(OP, "shared-h1")
    (spec,) = specs["items"]
    assert spec["name"] == "acme-secret-vm" and spec["shape"]["vcpu"] == 2
    answers += [("HostSpecs", specs), ("InstanceSpec", spec)]
    answers.append(("InstanceSpec", api.instances.spec(OP, world["acme"]["instance"]["id"])))
    guest_specs = api.instances.specs_for_host(owner, "shared-h1")
    (guest,) = guest_specs["items"]
    assert "name" not in guest and guest["id"].startswith("gst_")
    answers.append(("HostSpecs", guest_specs))
    booked = api.reservations.for_host(OP, "shared-h1")
    assert {b["tenantId"] for b in booked["items"]} == {"acme", "initech"}
    answers.append(("HostReservations", booked))
    guest_booked = api.reservations.for_host(owner, "shared-h1")
    assert all(set(b) >= {"id", "gpus"} and "tenantId" not in b for b in guest_booked["items"])
    answers.append(("HostReservations", guest_booked))
    ask = {"tenant_id": "acme", "pool_id": "shared", "duration": "1h"}
    behind_spot = api.capacity.preview(OP, gpus=1, **ask)
    assert not behind_spot["fits"] and behind_spot["preemptible"]["reservations"] == 1
    too_big = api.capacity.preview(OP, gpus=2, **ask)
    assert not too_big["fits"] and too_big["preemptReason"]
    api.reservations.cancel(OP, world["acme"]["reservation"]["id"])
    as_guest = api.capacity.preview(offered, gpus=1, **ask)
    assert as_guest["fits"] and set(as_guest["candidates"][0]) == {"id"}
    as_owner = api.capacity.preview(owner, gpus=1, **{**ask, "tenant_id": "hostco"})
    assert as_owner["candidates"] == [{"id": world["host"]["id"], "name": "shared-h1"}]
    answers += [("Preview", p) for p in (behind_spot, too_big, as_guest, as_owner)]
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_reservations_validates(fleet: Fleet) -> None:
    api = fleet.api
    world = build_world(fleet)
    placed = world["acme"]["reservation"]
    assert placed["during"] is not None and placed["devices"] == [{"class": "gpu", "count": 1}]
    answers: list[tuple[str, Any]] = [("Reservation", placed)]
    keyed = api.reservations.create(
        OP, tenant_id="acme", pool_id="shared", gpus=1, duration="2h", idempotency_key="k1"
    )
    assert keyed["idempotencyKey"] == "k1"
    answers.append(("Reservation", keyed))
    pending = api.reservations.create(OP, tenant_id="acme", pool_id="shared", gpus=2, duration="1h")
    assert pending["state"] == "pending" and pending["during"] is None
    answers.append(("Reservation", pending))
    batch = api.reservations.create_batch(
        OP,
        tenant_id="initech",
        pool_id="shared",
        requests=[{"gpus": 1, "duration": "1h", "spot": True}],
    )
    answers.append(("ReservationPage", batch))
    cancelled = api.reservations.cancel(OP, pending["id"])
    assert cancelled["releaseReason"] == "cancelled" and "releasedAt" in cancelled
    answers.append(("Reservation", cancelled))
    answers.append(("Reservation", api.reservations.get(OP, placed["id"])))
    answers.append(("ReservationPage", api.reservations.list(OP)))
    answers.append(("ReservationPage", api.reservations.list(OP, include_released=True)))
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_services_indexes_and_environments_validates(fleet: Fleet) -> None:
    api = fleet.api
    acme = build_world(fleet)["acme"]
    service, index, environment = acme["service"], acme["index"], acme["environment"]
    answers: list[tuple[str, Any]] = [
        ("Service", service),
        ("Index", index),
        ("Environment", environment),
    ]
    managed = api.services.create(
        OP, tenant_id="acme", workspace="prod", name="db", hosting="managed", environment="stg"
    )
    assert managed["environment"] == "stg" and managed["hosting"] == "managed"
    answers.append(("Service", managed))
    deployed = api.services.deploy(OP, managed["id"])
    assert deployed["status"] == "deployed" and deployed["deployedAt"] is not None
    answers.append(("Service", deployed))
    answers.append(("Service", api.services.undeploy(OP, managed["id"])))
    resized = api.services.set_size(OP, service["id"], "small")
    assert "notices" in resized and resized["message"]
    answers.append(("Service", resized))
    answers.append(("Service", api.services.show(OP, service["id"])))
    answers.append(("ServicePage", api.services.list(OP, tenant_id="acme")))
    sized = api.indexes.create(
        OP, tenant_id="acme", workspace="prod", name="logs", pod_size="large"
    )
    assert sized["compute"]["burstable"] is True
    answers.append(("Index", sized))
    answers.append(("Index", api.indexes.update(OP, sized["id"], default_pod_size=True)))
    answers.append(("Index", api.indexes.show(OP, index["id"])))
    answers.append(("IndexPage", api.indexes.list(OP, tenant_id="acme")))
    answers.append(("Environment", api.environments.update(OP, environment["id"], size="large")))
    shown = api.environments.show(OP, environment["id"])
    assert shown["services"] == 1
    answers.append(("Environment", shown))
    answers.append(("EnvironmentPage", api.environments.list(OP, tenant_id="acme")))
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_compute_settings_validates(fleet: Fleet) -> None:
    api = fleet.api
    build_world(fleet)
    answers: list[tuple[str, Any]] = []
    saved = api.settings.compute_set(
        OP, tenant_id="acme", serverless_pool="shared", spares={"large": 1}, default_size="large"
    )
    assert saved["message"] and saved["serverlessPool"] == "shared" and saved["lastError"] is None
    answers.append(("ComputeSettings", saved))
    drafted = api.settings.compute_draft(
        OP, tenant_id="acme", change=ComputeChange.from_flags(disable=["medium", "large"])
    )
    assert drafted["inUse"] and drafted["problems"]
    answers.append(("ComputeSettings", drafted))
    with fleet.write() as session:  # the spares job failed on acme
        upsert_fault(session, job="spares", kind="tenant", subject_id="acme", tenant_id="acme",
                     error="boom", message="spares failed", at=fleet.now())  # fmt: skip
    shown = api.settings.compute_show(OP, tenant_id="acme")
    assert shown["lastError"] is not None and shown["lastError"]["failures"] == 1
    assert shown["sizes"]["medium"]["usedBy"]
    answers.append(("ComputeSettings", shown))
    answers.append(("LastError", shown["lastError"]))
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_webhook_deliveries_validates(fleet: Fleet) -> None:
    api = fleet.api
    acme = build_world(fleet)["acme"]
    delivery = acme["delivery"]
    assert delivery["state"] == "pending" and delivery["deliveredAt"] is None
    page = api.webhooks.deliveries(OP, acme["webhook"]["id"])
    assert page["items"]
    again = api.webhooks.redeliver(OP, acme["webhook"]["id"], delivery["id"])
    assert again["attempts"] == 0
    answers = [
        ("WebhookDelivery", delivery),
        ("WebhookDeliveryPage", page),
        ("WebhookDelivery", again),
    ]
    answers.append(
        ("WebhookDeliveryPage", api.webhooks.deliveries(OP, acme["webhook"]["id"], state="dead"))
    )
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_events_validates(fleet: Fleet) -> None:
    api = fleet.api
    acme = build_world(fleet)["acme"]
    page = api.events.list(OP, tenant_id="acme")
    assert page["items"] and page["cursor"] == page["items"][-1]["seq"]
    assert any(e["subjectId"] == acme["instance"]["id"] for e in page["items"])
    empty = api.events.list(OP, tenant_id="acme", after=page["cursor"])
    assert empty == {"items": [], "cursor": page["cursor"]}
    answers: list[tuple[str, Any]] = [("EventPage", page), ("EventPage", empty)]
    answers.append(("EventPage", api.events.list(OP)))
    answers += [("Event", e) for e in page["items"]]
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_every_answer_for_usage_validates(fleet: Fleet) -> None:
    api = fleet.api
    mb.tenant(fleet, "acme")
    pool = mb.pool(fleet, gpu_model="L40S")
    node = mb.node(fleet, pool)
    mb.reservation(fleet, pool, spot=True, gpus=1, starts_at=T0,
                   ends_at=T0 + timedelta(hours=1), activated_at=T0)  # fmt: skip
    mb.instance(fleet, pool, node, start=T0, vcpu=2, memory_gib=4)
    mb.standard_meters(fleet)
    mb.meter_until(fleet, T0 + timedelta(minutes=12))
    page = api.usage.list(OP)
    assert page["items"] and page["cursor"] == page["items"][-1]["id"]
    dead = api.usage.dead_letters(OP)
    assert dead["items"] and dead["items"][0]["replayedAt"] is None
    api.meters.create(OP, "gpu.l40s.spot.hours")
    replayed = api.usage.replay(OP)
    assert replayed["billed"] == len(dead["items"])
    answers: list[tuple[str, Any]] = [
        ("UsagePage", page),
        ("UsagePage", api.usage.list(OP, after=page["cursor"])),
        ("DeadLetterPage", dead),
        ("DeadLetterPage", api.usage.dead_letters(OP)),
        ("Replayed", replayed),
    ]
    answers += [("UsageWindow", w) for w in api.usage.export(OP)]
    for component, body in answers:
        assert _problems(component, body) == [], (component, body)


def test_a_document_breaking_its_schema_is_caught() -> None:
    """The check above can fail: a wrong type, a missing key and an unknown key are each found."""
    good = {"id": "tnt_1", "name": "acme", "createdAt": "2026-11-30T10:00:00Z"}
    assert _problems("Tenant", good) == []
    assert _problems("Tenant", {**good, "name": 3})
    assert _problems("Tenant", {"id": "tnt_1", "name": "acme"})
    assert _problems("Tenant", {**good, "extra": True})
