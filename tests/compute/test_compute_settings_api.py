"""Document 004 through `fleet.api.settings`: sizes, spares and credits, the default size, sizes in use, who may do it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bcfleet.domain.compute_settings import ComputeChange, SizeChange
from bcfleet.errors import (
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    SizeInUseError,
)
from bcfleet.fleet import Fleet
from tests.support.builders import OP, hosted_pool, token
from tests.support.compute import legacy_service, make_spares_ready, serverless_tenant

SAVED = "Your compute settings are saved."


@pytest.fixture
def acme(fleet: Fleet) -> Fleet:
    fleet.api.tenants.create(OP, "acme")
    return fleet


def show(fleet: Fleet, tenant: str = "acme") -> dict[str, Any]:
    return fleet.api.settings.compute_show(OP, tenant_id=tenant)


def save(fleet: Fleet, tenant: str = "acme", **flags: Any) -> dict[str, Any]:
    return fleet.api.settings.compute_set(OP, tenant_id=tenant, **flags)


# -- sizes and the defaults -------------------------------------------------------------------


def test_each_size_lists_both_computes_in_the_documents_words(acme: Fleet) -> None:
    sizes = show(acme)["sizes"]
    assert list(sizes) == ["small", "medium", "large", "xlarge"]
    assert [(s["label"], s["service"]["text"], s["index"]["text"]) for s in sizes.values()] == [
        ("Small", "1 vCPU, 2 GiB memory", "0.4+ vCPU, 4 GiB memory"),
        ("Medium", "1 vCPU, 4 GiB memory", "0.9+ vCPU, 8 GiB memory"),
        ("Large", "2 vCPU, 8 GiB memory", "1.7+ vCPU, 16 GiB memory"),
        ("Extra large", "4 vCPU, 16 GiB memory", "3.5+ vCPU, 32 GiB memory"),
    ]


def test_a_tenant_that_never_saved_has_every_size_on_no_spares_and_medium_as_default(
    acme: Fleet,
) -> None:
    body = show(acme)
    assert all(s["enabled"] and s["spares"] == 0 for s in body["sizes"].values())
    assert body["totalCreditsPerMonth"] == 0
    assert body["defaultSize"] is None
    assert body["effectiveDefaultSize"] == "medium"
    assert body["version"] == 0


def test_saving_answers_the_documents_message_and_keeps_the_change(acme: Fleet) -> None:
    body = save(acme, spares={"large": 2})
    assert body["message"] == SAVED
    assert body["notices"] == []
    assert show(acme)["sizes"]["large"]["spares"] == 2
    assert show(acme)["version"] == 1


# -- spares and credits -------------------------------------------------------------------------


def test_two_spare_instances_show_1440_credits_per_month(acme: Fleet) -> None:
    body = save(acme, spares={"large": 2})
    assert body["sizes"]["large"]["creditsPerMonth"] == 1440
    assert body["totalCreditsPerMonth"] == 1440


def test_total_is_the_sum_over_enabled_sizes_only(acme: Fleet) -> None:
    save(acme, spares={"small": 1, "large": 2, "xlarge": 3})
    body = save(acme, disable=["xlarge"])
    assert body["sizes"]["xlarge"]["creditsPerMonth"] == 3 * 720
    assert body["totalCreditsPerMonth"] == 720 + 1440


def test_more_than_ten_spares_are_kept_as_ten_and_the_answer_says_so(acme: Fleet) -> None:
    body = save(acme, spares={"medium": 15})
    assert body["message"] == SAVED
    assert body["sizes"]["medium"]["spares"] == 10
    assert body["sizes"]["medium"]["creditsPerMonth"] == 7200
    [notice] = body["notices"]
    assert notice["code"] == "SPARES_CAPPED"
    assert notice["message"] == (
        "Maximum is 10 spare instances per size: you entered 15 for Medium, "
        "so we keep 10 instances ready."
    )


def test_zero_spares_keeps_the_size_enabled(acme: Fleet) -> None:
    save(acme, spares={"small": 3})
    body = save(acme, spares={"small": 0})
    assert body["sizes"]["small"]["enabled"] is True
    assert body["sizes"]["small"]["creditsPerMonth"] == 0


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param({"spares": {"large": -1}}, id="negative-spares"),
        pytest.param({"spares": {"huge": 1}}, id="unknown-size-in-spares"),
        pytest.param({"enable": ["tiny"]}, id="unknown-size-to-enable"),
        pytest.param({"enable": ["large"], "disable": ["large"]}, id="enable-and-disable"),
        pytest.param({"default_size": "large", "clear_default": True}, id="default-and-clear"),
    ],
)
def test_bad_input_is_invalid_and_changes_nothing(acme: Fleet, flags: dict[str, Any]) -> None:
    before = save(acme, spares={"large": 2})
    with pytest.raises(InvalidInputError):
        save(acme, **flags)
    after = show(acme)
    assert after["sizes"] == {k: v | {"usedBy": []} for k, v in before["sizes"].items()}
    assert after["version"] == before["version"]


def test_draft_shows_credits_while_editing_and_saves_nothing(acme: Fleet) -> None:
    change = ComputeChange({"large": SizeChange(spares=2), "small": SizeChange(spares=12)})
    draft = acme.api.settings.compute_draft(OP, tenant_id="acme", change=change)
    assert draft["sizes"]["large"]["creditsPerMonth"] == 1440
    assert draft["totalCreditsPerMonth"] == 1440 + 7200
    assert [n["code"] for n in draft["notices"]] == ["SPARES_CAPPED"]
    assert show(acme)["totalCreditsPerMonth"] == 0


# -- default size ---------------------------------------------------------------------------


def test_default_size_is_chosen_then_cleared_back_to_medium(acme: Fleet) -> None:
    chosen = save(acme, default_size="large")
    assert (chosen["defaultSize"], chosen["effectiveDefaultSize"]) == ("large", "large")
    assert chosen["sizes"]["large"]["defaultLocked"] is True
    cleared = save(acme, clear_default=True)
    assert (cleared["defaultSize"], cleared["effectiveDefaultSize"]) == (None, "medium")


def test_default_size_list_shows_enabled_sizes_with_their_service_compute(acme: Fleet) -> None:
    body = save(acme, disable=["small"])
    assert body["defaultSizeChoices"] == [
        {"size": "medium", "label": "Medium (1 vCPU, 4 GiB memory)"},
        {"size": "large", "label": "Large (2 vCPU, 8 GiB memory)"},
        {"size": "xlarge", "label": "Extra large (4 vCPU, 16 GiB memory)"},
    ]


def test_only_an_enabled_size_can_be_the_default(acme: Fleet) -> None:
    save(acme, disable=["xlarge"])
    with pytest.raises(InvalidInputError, match="Only enabled sizes"):
        save(acme, default_size="xlarge")
    assert show(acme)["defaultSize"] is None


def test_the_default_sizes_switch_is_locked(acme: Fleet) -> None:
    save(acme, default_size="large")
    with pytest.raises(InvalidInputError, match="first choose a different default size"):
        save(acme, disable=["large"])
    body = save(acme, disable=["large"], default_size="small")
    assert body["message"] == SAVED
    assert body["sizes"]["large"]["enabled"] is False


def test_medium_off_without_a_default_asks_for_one(acme: Fleet) -> None:
    with pytest.raises(InvalidInputError, match="choose a default size"):
        save(acme, disable=["medium"])
    assert show(acme)["sizes"]["medium"]["enabled"] is True
    assert save(acme, disable=["medium"], default_size="small")["message"] == SAVED


def test_clearing_the_default_with_medium_off_is_refused(acme: Fleet) -> None:
    save(acme, disable=["medium"], default_size="small")
    with pytest.raises(InvalidInputError, match="choose a default size"):
        save(acme, clear_default=True)


def test_api_services_without_a_size_use_medium_regardless_of_the_default(acme: Fleet) -> None:
    save(acme, default_size="large")
    svc = acme.api.services.create(OP, tenant_id="acme", workspace="prod", name="web")
    assert (svc["size"], svc["memoryGiB"]) == ("medium", 4)


# -- sizes in use -------------------------------------------------------------------------


def _service(size: str, **kw: Any) -> Callable[[Fleet], None]:
    def make(fleet: Fleet) -> None:
        svc = fleet.api.services.create(
            OP, tenant_id="acme", workspace="prod", name="web", size=size,
            hosting=kw.get("hosting", "serverless"),
        )  # fmt: skip
        if kw.get("deployed"):
            fleet.api.services.start(OP, svc["id"])

    return make


def _index(pod_size: str | None, deployed: bool) -> Callable[[Fleet], None]:
    def make(fleet: Fleet) -> None:
        fleet.api.indexes.create(
            OP, tenant_id="acme", workspace="search", name="docs", pod_size=pod_size,
            deployed=deployed,
        )  # fmt: skip

    return make


def _environment_with_service(env_size: str) -> Callable[[Fleet], None]:
    def make(fleet: Fleet) -> None:
        fleet.api.environments.create(OP, tenant_id="acme", name="staging", size=env_size)
        svc = fleet.api.services.create(
            OP, tenant_id="acme", workspace="prod", name="web", environment="staging"
        )
        fleet.api.services.start(OP, svc["id"])

    return make


def _legacy(deployed: bool) -> Callable[[Fleet], None]:
    def make(fleet: Fleet) -> None:
        legacy_service(fleet, "acme", "prod", "old-web", deployed=deployed)

    return make


BLOCKS = [
    pytest.param(_service("large", deployed=True), "large", True, id="deployed-serverless-service"),
    pytest.param(_service("large"), "large", False, id="undeployed-service-does-not-count"),
    pytest.param(
        _service("large", deployed=True, hosting="managed"),
        "large",
        False,
        id="managed-service-does-not-count",
    ),  # fmt: skip
    pytest.param(_index("large", True), "large", True, id="deployed-index-with-pod-size"),
    pytest.param(_index("large", False), "large", True, id="undeployed-index-still-claims-it"),
    pytest.param(_index(None, True), "small", False, id="index-on-default-pod-size-never-blocks"),
    pytest.param(
        lambda f: f.api.environments.create(OP, tenant_id="acme", name="qa", size="large"),
        "large",
        True,
        id="empty-environment-set-to-it",
    ),  # fmt: skip
    pytest.param(
        _environment_with_service("xlarge"),
        "xlarge",
        True,
        id="service-runs-on-its-environments-size",
    ),  # fmt: skip
    pytest.param(_legacy(True), "large", True, id="service-from-before-sizes-is-large"),
    pytest.param(_legacy(False), "large", False, id="undeployed-old-service-does-not-count"),
]


@pytest.mark.parametrize(("arrange", "size", "blocked"), BLOCKS)
def test_what_keeps_a_size_from_being_turned_off(
    fleet: Fleet, arrange: Callable[[Fleet], None], size: str, blocked: bool
) -> None:
    serverless_tenant(fleet)
    arrange(fleet)
    if blocked:
        with pytest.raises(SizeInUseError):
            save(fleet, disable=[size])
        assert show(fleet)["sizes"][size]["enabled"] is True
    else:
        assert save(fleet, disable=[size])["sizes"][size]["enabled"] is False


def test_turning_off_a_size_a_deployed_service_uses_fails_then_succeeds_once_undeployed(
    fleet: Fleet,
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    svc = fleet.api.services.create(
        OP, tenant_id="acme", workspace="prod", name="web", size="large"
    )
    fleet.api.services.start(OP, svc["id"])
    before = show(fleet)

    with pytest.raises(SizeInUseError) as refused:
        save(fleet, disable=["large"], spares={"small": 1})
    assert refused.value.code == "SIZE_IN_USE"
    assert refused.value.message == "Size Large is in use: service web (workspace prod)"
    [blocked] = refused.value.details["sizes"]
    assert blocked["size"] == "large"
    assert blocked["users"] == [
        {"kind": "service", "id": svc["id"], "name": "web", "workspace": "prod"}
    ]
    assert show(fleet) == before  # nothing changed, not even the spares asked for alongside

    fleet.api.services.undeploy(OP, svc["id"])
    body = save(fleet, disable=["large"], spares={"small": 1})
    assert body["message"] == SAVED
    assert body["sizes"]["large"]["enabled"] is False
    assert body["sizes"]["small"]["spares"] == 1


def test_the_error_lists_each_environment_service_with_workspace_and_index(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    fleet.api.environments.create(OP, tenant_id="acme", name="staging", size="large")
    for workspace, name in (("prod", "api"), ("dev", "web")):
        svc = fleet.api.services.create(
            OP, tenant_id="acme", workspace=workspace, name=name, size="large"
        )
        fleet.api.services.start(OP, svc["id"])
    fleet.api.indexes.create(
        OP, tenant_id="acme", workspace="search", name="docs", pod_size="large"
    )
    with pytest.raises(SizeInUseError) as refused:
        save(fleet, disable=["large"])
    assert refused.value.message == (
        "Size Large is in use: service web (workspace dev), service api (workspace prod), "
        "environment staging, index docs (workspace search)"
    )


def test_a_service_deployed_after_the_tab_was_opened_still_blocks_the_save(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    opened = show(fleet)
    assert opened["sizes"]["xlarge"]["usedBy"] == []
    svc = fleet.api.services.create(OP, tenant_id="acme", workspace="prod", name="w", size="xlarge")
    fleet.api.services.start(OP, svc["id"])
    with pytest.raises(SizeInUseError, match="service w"):
        save(fleet, disable=["xlarge"])
    assert show(fleet)["sizes"]["xlarge"]["usedBy"][0]["name"] == "w"  # reopening refreshes it


def test_a_size_that_was_already_off_never_blocks_a_save(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    save(fleet, disable=["xlarge"])
    legacy_service(fleet, "acme", "prod", "old")  # Large, deployed
    from bcfleet.store.models.compute import PipelineIndex

    with fleet.write() as session:  # an index that got Extra large before it was turned off
        now = fleet.now()
        session.add(
            PipelineIndex(
                id=fleet.new_id("idx"),
                tenant_id="acme",
                workspace="s",
                name="i",
                pod_size="xlarge",
                created_at=now,
                updated_at=now,
            )  # fmt: skip
        )
    body = save(fleet, disable=["xlarge"], spares={"small": 2})
    assert body["message"] == SAVED
    assert body["sizes"]["small"]["spares"] == 2


def test_draft_warns_about_sizes_in_use_before_saving(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    fleet.api.environments.create(OP, tenant_id="acme", name="qa", size="small")
    draft = fleet.api.settings.compute_draft(
        OP, tenant_id="acme", change=ComputeChange({"small": SizeChange(enabled=False)})
    )
    assert draft["inUse"][0]["users"][0] | {"id": None} == {
        "kind": "environment", "name": "qa", "id": None,
    }  # fmt: skip
    assert draft["sizes"]["small"]["enabled"] is False
    assert show(fleet)["sizes"]["small"]["enabled"] is True


def test_a_turned_off_size_is_unavailable_to_new_users_but_kept_by_one_that_has_it(
    fleet: Fleet,
) -> None:
    serverless_tenant(fleet)
    svc = fleet.api.services.create(
        OP, tenant_id="acme", workspace="prod", name="m", size="large", hosting="managed"
    )
    save(fleet, disable=["large"])
    for make in (
        lambda: fleet.api.services.create(OP, tenant_id="acme", workspace="p", name="n", size="large"),
        lambda: fleet.api.environments.create(OP, tenant_id="acme", name="e", size="large"),
        lambda: fleet.api.indexes.create(OP, tenant_id="acme", workspace="p", name="i", pod_size="large"),
    ):  # fmt: skip
        with pytest.raises(InvalidInputError, match="Size Large is turned off"):
            make()
    assert fleet.api.services.set_size(OP, svc["id"], "large")["size"] == "large"
    assert fleet.api.services.deploy(OP, svc["id"])["status"] == "deployed"


# -- serverless pool -------------------------------------------------------------------------


def test_serverless_pool_is_a_visible_vps_host_pool(acme: Fleet) -> None:
    pool = hosted_pool(acme)
    assert save(acme, serverless_pool="vps-fra")["serverlessPoolId"] == pool["id"]
    assert show(acme)["serverlessPool"] == "vps-fra"
    hosted_pool(acme, "vps-private", offered_to=())
    with pytest.raises(NotFoundError):
        save(acme, serverless_pool="vps-private")


# -- who may do it ----------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_only_organization_admins_view_and_change_compute_settings(fleet: Fleet, role: str) -> None:
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "ada", "admin")
    other = token(fleet, "acme", "max", role)
    assert (
        fleet.api.settings.compute_set(admin, tenant_id="acme", spares={"large": 1})["message"]
        == SAVED
    )
    assert fleet.api.settings.compute_show(admin, tenant_id="acme")["sizes"]["large"]["spares"] == 1
    with pytest.raises(ForbiddenError):
        fleet.api.settings.compute_set(other, tenant_id="acme", spares={"large": 3})
    with pytest.raises(ForbiddenError):
        fleet.api.settings.compute_show(other, tenant_id="acme")
    assert show(fleet)["sizes"]["large"]["spares"] == 1


def test_another_tenants_admin_cannot_touch_them(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    fleet.api.tenants.create(OP, "globex")
    outsider = token(fleet, "globex", "gus", "admin")
    with pytest.raises(ForbiddenError):
        fleet.api.settings.compute_set(outsider, tenant_id="acme", disable=["small"])
    with pytest.raises(ForbiddenError):
        fleet.api.settings.compute_show(outsider, tenant_id="acme")


def test_members_create_and_deploy_services_but_not_settings(fleet: Fleet, clock: Any) -> None:
    serverless_tenant(fleet, spares={"medium": 1})
    make_spares_ready(fleet, clock)
    member = token(fleet, "acme", "mia", "member")
    svc = fleet.api.services.create(member, tenant_id="acme", workspace="prod", name="web")
    assert fleet.api.services.deploy(member, svc["id"])["status"] == "deployed"
    viewer = token(fleet, "acme", "vic", "viewer")
    assert fleet.api.services.show(viewer, svc["id"])["name"] == "web"
    with pytest.raises(ForbiddenError):
        fleet.api.services.undeploy(viewer, svc["id"])
