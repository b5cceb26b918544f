"""What the console's deletes name before they go (fleet.api.dependents): a flavor's live
instances and whether it is archived, the instance a service holds, the services that keep an
environment (its delete is refused), a webhook's deliveries, what a token serves; and the
policies list. The same over HTTP: tests/tui/test_tui_admin_views.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.errors import ConflictError, ForbiddenError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.tui.source import LocalSource
from tests.support.builders import token
from tests.support.tui import build_fleet, open_test_fleet


@pytest.fixture
def demo(tmp_path: Path) -> Fleet:
    return open_test_fleet(build_fleet(tmp_path))


def flavor(fleet: Fleet, name: str, pool: str = "gpu-burst") -> dict[str, object]:
    found = LocalSource(fleet).flavors()
    return next(f for f in found if (f["pool"], f["name"]) == (pool, name))  # type: ignore[return-value]


def test_a_used_flavor_names_its_live_instances_and_is_archived_an_unused_one_deleted(
    demo: Fleet,
) -> None:
    source = LocalSource(demo)
    used = flavor(demo, "gpu1.l40s")
    found = source.dependents("flavor", used)
    assert found["outcome"] == "archived"
    live = sorted(
        i["name"] for i in demo.api.instances.list(OP)["items"]
        if i["flavorId"] == used["id"] and i["state"] != "deleted"
    )  # fmt: skip
    assert sorted(d["name"] for d in found["items"]) == live and live
    pool = str(used["poolId"])
    demo.api.flavors.create(OP, tenant_id="root", pool_id=pool, name="unused", vcpu=1,
                            memory_gib=1, disk_gib=10)  # fmt: skip
    fresh = source.dependents("flavor", flavor(demo, "unused"))
    assert fresh == {"items": [], "outcome": "deleted"}
    assert source.delete_flavor(pool, "unused") == {"deleted": True, "archived": False}
    assert source.delete_flavor(pool, "gpu1.l40s") == {"deleted": False, "archived": True}


def test_an_environment_with_services_names_them_and_its_delete_is_refused(demo: Fleet) -> None:
    env = demo.api.environments.list(OP)["items"][0]
    service = demo.api.services.create(OP, tenant_id=env["tenantId"], workspace="qa",
                                       name="api", environment=env["name"])  # fmt: skip
    found = demo.api.dependents.of_environment(OP, env["id"])
    assert found == {
        "items": [
            {"kind": "service", "id": service["id"], "name": "qa/api", "state": "undeployed"}
        ],
        "outcome": "refused",
    }
    with pytest.raises(ConflictError):
        demo.api.environments.delete(OP, env["id"])
    demo.api.services.delete(OP, service["id"])
    assert demo.api.dependents.of_environment(OP, env["id"])["outcome"] == "deleted"


def test_a_deployed_service_names_the_instance_serving_it(demo: Fleet) -> None:
    web = next(s for s in demo.api.services.list(OP)["items"] if s["deployed"])
    found = demo.api.dependents.of_service(OP, web["id"])["items"]
    assert [(d["kind"], d["id"]) for d in found] == [("instance", web["instanceId"])]


def test_a_token_names_the_host_agent_it_serves_and_the_callers_own_session(demo: Fleet) -> None:
    agent = demo.api.iam.create_token(OP, tenant_id="root", name="agent-fra-01", role="agent",
                                      host="fra-01")  # fmt: skip
    found = demo.api.dependents.of_token(OP, tenant_id="root", token_id=agent["id"])["items"]
    assert [(d["kind"], d["name"]) for d in found] == [("host agent", "fra-01")]
    mine = demo.api.iam.create_token(OP, tenant_id="acme", name="ops", role="admin")
    own = demo.api.dependents.of_token(mine["token"], tenant_id="acme", token_id=mine["id"])
    assert [d["kind"] for d in own["items"]] == ["session"]
    with pytest.raises(NotFoundError):  # another tenant's token is not found, as revoke says
        demo.api.dependents.of_token(mine["token"], tenant_id="acme", token_id=agent["id"])


def test_a_webhook_without_waiting_deliveries_names_none(demo: Fleet) -> None:
    hook = demo.api.webhooks.create(OP, tenant_id="acme", url="https://hooks.example.com/a")
    assert demo.api.dependents.of_webhook(OP, hook["id"]) == {"items": [], "outcome": "deleted"}


def test_policies_list_their_principals_and_another_tenant_may_not_read_them(demo: Fleet) -> None:
    demo.api.iam.create_token(OP, tenant_id="acme", name="alice", role="member")
    statements = [{"effect": "allow", "actions": ["compute:instances:read"],
                   "resources": ["tenant:acme/*"]}]  # fmt: skip
    demo.api.iam.create_policy(OP, tenant_id="acme", name="readers", statements=statements,
                               attach_to=["alice"])  # fmt: skip
    items = demo.api.iam.list_policies(OP, tenant_id="acme")["items"]
    assert [(p["name"], p["attachedTo"], p["statements"]) for p in items] == [
        ("readers", ["alice"], statements)
    ]
    with pytest.raises(ForbiddenError):  # as tokens.list answers another tenant's reader
        demo.api.iam.list_policies(token(demo, "globex", "bob"), tenant_id="acme")


def test_a_pool_names_what_keeps_it_in_its_conflicts_words_and_an_empty_one_goes(
    demo: Fleet,
) -> None:
    found = demo.api.dependents.of_pool(OP, tenant_id="root", pool="vps-fra")
    assert found["outcome"] == "refused"
    labels = [d["kind"] for d in found["items"]]
    assert labels[:2] == ["hosts", "flavors"]
    with pytest.raises(ConflictError) as refused:
        demo.api.pools.delete(OP, tenant_id="root", pool="vps-fra")
    assert refused.value.details["has"] == labels
    demo.api.pools.create(OP, tenant_id="root", name="empty", kind="vps-host")
    assert demo.api.dependents.of_pool(OP, tenant_id="root", pool="empty") == {
        "items": [], "outcome": "deleted"
    }  # fmt: skip
    demo.api.pools.delete(OP, tenant_id="root", pool="empty")


def test_a_provider_account_names_the_pools_on_it(demo: Fleet) -> None:
    demo.api.provider_accounts.create(OP, tenant_id="root", name="hz", provider="hetzner",
                                      token_env="HCLOUD_TOKEN")  # fmt: skip
    assert demo.api.dependents.of_provider_account(OP, tenant_id="root", account="hz") == {
        "items": [], "outcome": "deleted"
    }  # fmt: skip
    demo.api.pools.create(OP, tenant_id="root", name="hz-fsn", kind="provider",
                          provider_account="hz")  # fmt: skip
    found = demo.api.dependents.of_provider_account(OP, tenant_id="root", account="hz")
    assert found == {"items": [{"kind": "pool", "id": "hz-fsn", "name": "hz-fsn"}],
                     "outcome": "refused"}  # fmt: skip


def test_a_host_that_ran_guests_and_a_tenant_that_owns_rows_name_them_root_never_goes(
    demo: Fleet,
) -> None:
    used = demo.api.dependents.of_host(OP, host="fra-01")
    assert used["outcome"] == "refused" and "instances" in [d["kind"] for d in used["items"]]
    pool = demo.api.pools.show(OP, pool="vps-fra")
    demo.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-99")
    assert demo.api.dependents.of_host(OP, host="fra-99") == {"items": [], "outcome": "deleted"}
    acme = demo.api.dependents.of_tenant(OP, "acme")
    assert acme["outcome"] == "refused" and acme["items"]
    assert demo.api.dependents.of_tenant(OP, "root")["outcome"] == "refused"
    demo.api.tenants.create(OP, "initech")
    assert demo.api.dependents.of_tenant(OP, "initech") == {"items": [], "outcome": "deleted"}
