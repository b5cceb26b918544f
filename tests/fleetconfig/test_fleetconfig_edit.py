"""An edit of part of a FleetConfig (the console's `e` and `n`): merged into the state, planned
and applied only where it declares, under fleet apply's lock and STALE_PLAN rule."""

from __future__ import annotations

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.errors import InvalidInputError, StalePlanError
from bcfleet.fleet import Fleet
from bcfleet.reconcile.apply import Approved, apply, make_plan, observe_state, plan_json
from bcfleet.reconcile.edit import Edit, load_edit
from bcfleet.reconcile.load import load_fleetconfig_text

FLEET = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
- {id: acme}
- {id: globex}
pools:
- {name: ams, kind: vps-host, offeredTo: [acme, globex]}
- {name: fra, kind: vps-host}
flavors:
- {pool: ams, name: small, vcpu: 2, memoryGiB: 4, diskGiB: 20}
- {pool: fra, name: small, vcpu: 2, memoryGiB: 4, diskGiB: 20}
quotas:
- {tenant: acme, pool: ams, vcpu: 16}
"""


def managed(fleet: Fleet) -> Fleet:
    desired = load_fleetconfig_text(FLEET, host_reserve=fleet.settings.host_reserve)
    result = make_plan(fleet, OP, desired)
    apply(fleet, OP, Approved(desired, plan_json(result), auto_approve=True))
    return fleet


def edit(fleet: Fleet, text: str) -> Edit:
    observed = observe_state(fleet, OP)
    return load_edit(text, observed, file="e.yaml", host_reserve=fleet.settings.host_reserve)


def apply_edit(fleet: Fleet, text: str) -> str:
    change = edit(fleet, text)
    result = make_plan(fleet, OP, change.desired, scope=change.scope)
    approved = Approved(change.desired, plan_json(result), scope=change.scope)
    return apply(fleet, OP, approved).message


def test_an_edit_changes_what_it_declares_and_deletes_nothing_it_leaves_out(fleet: Fleet) -> None:
    managed(fleet)
    text = "flavors:\n- {pool: ams, name: small, vcpu: 4, memoryGiB: 4, diskGiB: 20}\n"
    assert apply_edit(fleet, text) == "Apply complete! 0 added, 1 changed, 0 deleted."
    full = load_fleetconfig_text(FLEET, host_reserve=fleet.settings.host_reserve)
    left = make_plan(fleet, OP, full)
    assert [a.address for a in left.changes] == ["flavor.ams.small"]  # only what was edited


def test_a_pool_edit_owns_its_offers_and_nothing_else(fleet: Fleet) -> None:
    managed(fleet)
    change = edit(fleet, "pools:\n- {name: ams, kind: vps-host, offeredTo: [acme]}\n")
    result = make_plan(fleet, OP, change.desired, scope=change.scope)
    assert [(a.address, a.actions) for a in result.changes] == [("offer.ams.globex", ("delete",))]


def test_a_new_object_may_name_what_only_the_state_declares(fleet: Fleet) -> None:
    managed(fleet)
    text = "quotas:\n- {tenant: globex, pool: fra, gpu: 0}\n"
    assert apply_edit(fleet, text) == "Apply complete! 1 added, 0 changed, 0 deleted."


def test_problems_are_at_the_fragments_own_line_and_column(fleet: Fleet) -> None:
    managed(fleet)
    text = "# a flavor\nflavors:\n- pool: nowhere\n  name: x\n  vcpu: 2\n  memoryGiB: 2\n  diskGiB: 1\n"
    with pytest.raises(InvalidInputError) as raised:
        edit(fleet, text)
    errors = raised.value.details["errors"]
    assert [(e["file"], e["line"], e["column"]) for e in errors] == [("e.yaml", 3, 9)]
    assert "nowhere" in errors[0]["message"]


def test_a_change_after_the_plan_was_shown_is_stale_but_one_elsewhere_is_not(
    any_fleet: Fleet,
) -> None:
    fleet = managed(any_fleet)
    text = "flavors:\n- {pool: ams, name: small, vcpu: 4, memoryGiB: 4, diskGiB: 20}\n"
    change = edit(fleet, text)
    shown = plan_json(make_plan(fleet, OP, change.desired, scope=change.scope))
    pools = {p["name"]: p for p in fleet.api.pools.list(OP)["items"]}
    fleet.api.flavors.update(OP, tenant_id="root", pool_id=pools["fra"]["id"], name="small",
                             vcpu=8, memory_gib=4, disk_gib=20)  # fmt: skip
    approved = Approved(change.desired, shown, scope=change.scope)
    assert apply(fleet, OP, approved).message.endswith("1 changed, 0 deleted.")  # fra: not ours

    change = edit(fleet, text.replace("vcpu: 4", "vcpu: 6"))
    shown = plan_json(make_plan(fleet, OP, change.desired, scope=change.scope))
    fleet.api.flavors.update(OP, tenant_id="root", pool_id=pools["ams"]["id"], name="small",
                             vcpu=3, memory_gib=4, disk_gib=20)  # fmt: skip
    with pytest.raises(StalePlanError):
        apply(fleet, OP, Approved(change.desired, shown, scope=change.scope))
    ams = fleet.api.flavors.get(OP, tenant_id="root", pool_id=pools["ams"]["id"], name="small")
    assert ams["vcpu"] == 3  # nothing applied
