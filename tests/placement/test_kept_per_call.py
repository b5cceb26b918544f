"""What a placement keeps from one call to the next is invisible: a policy or a flavor changed
between two calls (through another fleet handle on the same database, or by hand) is obeyed
on the second, and every answer is the one a handle that never placed gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.errors import FleetError
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from tests.placement.test_catalog_cache import (
    by_hand,
    create,
    handles,
    lookups,
    without_cache,
)
from tests.support.builders import OP, token
from tests.support.fleet import T0

__all__ = ["handles", "lookups"]  # the fixtures, shared with the catalog cache's tests

DENY_CREATE = [{"effect": "deny", "actions": ["compute:instances:create"], "resources": ["*"]}]
DENY_DELETE = [{"effect": "deny", "actions": ["compute:instances:delete"], "resources": ["*"]}]


def test_a_policy_attached_through_another_handle_is_obeyed_on_the_next_call(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    boss = token(b, "bench", "boss")
    assert create(a, pool["id"], boss)[0] == "placed"
    b.api.iam.create_policy(OP, tenant_id="bench", name="stop", statements=DENY_CREATE,
                            attach_to=["boss"])  # fmt: skip
    refused = create(a, pool["id"], boss)
    assert refused[0] == "FORBIDDEN"
    assert refused == without_cache(a.settings.db_url, pool["id"], boss)
    assert create(a, pool["id"])[0] == "placed"  # root's admin, acting for bench: not denied


def test_a_policy_changed_by_hand_is_obeyed_on_the_next_call(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    boss = token(b, "bench", "boss")
    b.api.iam.create_policy(OP, tenant_id="bench", name="stop", statements=DENY_CREATE,
                            attach_to=["boss"])  # fmt: skip
    assert create(a, pool["id"], boss)[0] == "FORBIDDEN"
    by_hand(b, f"UPDATE policies SET statements = '{json.dumps(DENY_DELETE)}'")
    assert create(a, pool["id"], boss)[0] == "placed"
    by_hand(b, f"UPDATE policies SET statements = '{json.dumps(DENY_CREATE)}'")
    refused = create(a, pool["id"], boss)
    assert refused[0] == "FORBIDDEN"
    assert refused == without_cache(a.settings.db_url, pool["id"], boss)


def placed(fleet: Fleet, pool: str, flavor: str = "b1.small") -> tuple[Any, ...]:
    """A create's answer without what differs from one instance to the next (id, name, times,
    node)."""
    try:
        made = fleet.api.instances.create(OP, tenant_id="bench", pool_id=pool, flavor=flavor)
    except FleetError as exc:
        return (exc.code, exc.message, exc.details)
    return (made["state"], made["flavor"], made["flavorId"], made["shape"])


def fresh_handle(url: str) -> Fleet:
    """A handle that never placed, its ids apart from the other handles'."""
    return Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url),
                      ids=IdFactory(seed=23))  # fmt: skip


def placed_without_cache(url: str, pool: str, flavor: str = "b1.small") -> tuple[Any, ...]:
    fresh = fresh_handle(url)
    try:
        return placed(fresh, pool, flavor)
    finally:
        fresh.close()


def test_a_flavor_changed_by_hand_gives_its_new_shape_on_the_next_call(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    first = placed(a, pool["id"])
    assert first[3] == {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "gpus": 0}
    assert placed(a, pool["id"]) == first  # kept
    by_hand(b, "UPDATE flavors SET vcpu = 3, memory_gib = 6")
    after = placed(a, pool["id"])
    assert after[3] == {"vcpu": 3, "memoryGiB": 6, "diskGiB": 40, "gpus": 0}
    assert after == placed_without_cache(a.settings.db_url, pool["id"])


def test_a_flavor_renamed_through_another_handle_is_placed_by_its_new_name(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    assert placed(a, pool["id"])[0] == "running"
    by_hand(b, "UPDATE flavors SET name = 'b1.tiny', vcpu = 1, memory_gib = 2, disk_gib = 20")
    assert placed(a, pool["id"])[0] == "NOT_FOUND"
    after = placed(a, pool["id"], "b1.tiny")
    assert after[:2] == ("running", "b1.tiny")
    assert after[3] == {"vcpu": 1, "memoryGiB": 2, "diskGiB": 20, "gpus": 0}
    assert after == placed_without_cache(a.settings.db_url, pool["id"], "b1.tiny")


def test_a_batch_is_answered_from_the_catalog_cache_and_sees_its_changes(
    handles: tuple[Fleet, Fleet, dict[str, Any]], lookups: list[int]
) -> None:
    a, b, pool = handles

    def batch(fleet: Fleet) -> tuple[Any, ...]:
        try:
            made = fleet.api.instances.create_batch(
                OP, tenant_id="bench", pool_id=pool["id"], flavor="b1.small", count=2
            )
        except FleetError as exc:
            return (exc.code, exc.message, exc.details)
        return (made["placed"], made["reason"], [(i["state"], i["shape"]) for i in made["items"]])

    first = batch(a)
    assert first[0] == 2
    assert batch(a) == first
    assert lookups == [1]  # the second batch's pool and flavor came from the cache
    by_hand(b, "UPDATE flavors SET vcpu = 3")
    after = batch(a)
    assert (after[2][0][1]["vcpu"], lookups) == (3, [2])
    fresh = fresh_handle(a.settings.db_url)
    try:
        assert batch(fresh) == after
    finally:
        fresh.close()
    b.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="bench", revoke=True)
    assert batch(a)[0] == "NOT_FOUND"


@pytest.mark.parametrize("credential", ["operator", "bench admin"])
def test_a_create_answers_what_show_reads_back(
    handles: tuple[Fleet, Fleet, dict[str, Any]], credential: str
) -> None:
    a, b, pool = handles
    who = OP if credential == "operator" else token(b, "bench", "boss")
    b.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="huge", vcpu=4096,
                         memory_gib=4, disk_gib=40)  # fmt: skip
    fresh = fresh_handle(a.settings.db_url)
    try:
        for flavor in ("b1.small", "b1.small", "huge", "huge"):  # placed, and pending
            made = a.api.instances.create(who, tenant_id="bench", pool_id=pool["id"], flavor=flavor)
            assert made == fresh.api.instances.show(who, made["id"], tenant_id="bench")
    finally:
        fresh.close()
