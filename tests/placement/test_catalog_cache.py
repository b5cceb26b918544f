"""A placement's catalog cache: what the tenant's check and the pool-and-flavor lookup found is
used while the catalog revision is the one it was found at, so a change made through another
fleet handle (or by hand) is seen at once, and every answer is the one a handle without a
cache gives; authorization is still decided for each call's credential."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import SQLModel

from bcfleet.api import lookup
from bcfleet.clock import FakeClock
from bcfleet.errors import FleetError
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from bench.common import seed_pool
from tests.support.builders import OP, token
from tests.support.fleet import T0, open_fleet

TENANCY = {"tenants", "principals", "api_tokens", "policies", "policy_attachments"}


def another_handle(url: str) -> Fleet:
    """A second fleet handle on the same database, with a placement context of its own."""
    return Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url),
                      ids=IdFactory(seed=11))  # fmt: skip


@pytest.fixture
def handles(db_url: str) -> Iterator[tuple[Fleet, Fleet, dict[str, Any]]]:
    """Handle A, handle B and the pool (offered to tenant bench, flavor b1.small) on one database."""
    a = open_fleet(db_url, FakeClock(T0))
    b = another_handle(db_url)
    try:
        pool = seed_pool(b, 4)
        yield a, b, pool
    finally:
        a.close()
        b.close()


def answer(call: Callable[[], dict[str, Any]]) -> tuple[Any, ...]:
    """What a create answers, as the client sees it: the error's code, message and details, or
    that it placed."""
    try:
        made = call()
    except FleetError as exc:
        return (exc.code, exc.message, exc.details)
    return ("placed", made["state"], made["flavor"])


def create(fleet: Fleet, pool: str, credential: Any = OP, **kw: Any) -> tuple[Any, ...]:
    fields = {"tenant_id": "bench", "pool_id": pool, "flavor": "b1.small", **kw}
    return answer(lambda: fleet.api.instances.create(credential, **fields))


def without_cache(url: str, pool: str, credential: Any = OP, **kw: Any) -> tuple[Any, ...]:
    """The answer of a handle that never placed: nothing in its cache."""
    fresh = another_handle(url)
    try:
        return create(fresh, pool, credential, **kw)
    finally:
        fresh.close()


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the pool-and-flavor statement was sent."""
    sent = [0]
    send = lookup._send_pool_and_flavor

    def counted(*args: Any) -> Any:
        sent[0] += 1
        return send(*args)

    monkeypatch.setattr(lookup, "_send_pool_and_flavor", counted)
    return sent


def by_hand(fleet: Fleet, sql: str) -> None:
    with fleet.engine.begin() as connection:
        connection.execute(text(sql))


def test_a_create_like_the_last_reads_neither_the_tenant_nor_the_lookup(
    handles: tuple[Fleet, Fleet, dict[str, Any]], lookups: list[int]
) -> None:
    a, _, pool = handles
    for _ in range(3):
        assert create(a, pool["id"])[0] == "placed"
    assert lookups == [1]
    assert create(a, pool["name"])[0] == "placed"  # another reference: another key
    assert lookups == [2]


def test_a_flavor_archived_through_another_handle_is_not_found(
    handles: tuple[Fleet, Fleet, dict[str, Any]], lookups: list[int]
) -> None:
    a, b, pool = handles
    assert create(a, pool["id"])[0] == "placed"
    b.api.flavors.delete(OP, tenant_id="root", pool_id=pool["id"], name="b1.small")  # archived
    after = create(a, pool["id"])
    assert (after[0], lookups) == ("NOT_FOUND", [2])  # looked up again, not answered from the cache
    assert after == without_cache(a.settings.db_url, pool["id"])


def test_a_pool_renamed_by_hand_is_not_found_by_its_old_name(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    assert create(a, pool["name"])[0] == "placed"
    by_hand(b, f"UPDATE pools SET name = 'elsewhere' WHERE id = '{pool['id']}'")
    after = create(a, pool["name"])
    assert after[0] == "NOT_FOUND"
    assert after == without_cache(a.settings.db_url, pool["name"])
    assert create(a, "elsewhere")[0] == "placed"


def test_a_pool_deleted_by_hand_is_not_found(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    assert create(a, pool["id"])[0] == "placed"
    # The pool and every row under it, which no API call deletes while it holds instances.
    for table in reversed(SQLModel.metadata.sorted_tables):
        if table.name not in TENANCY:
            by_hand(b, f'DELETE FROM "{table.name}"')
    after = create(a, pool["id"])
    assert after[0] == "NOT_FOUND"
    assert after == without_cache(a.settings.db_url, pool["id"])


def test_an_offer_withdrawn_through_another_handle_is_not_found(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    assert create(a, pool["id"])[0] == "placed"
    b.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="bench", revoke=True)
    after = create(a, pool["id"])
    assert after[0] == "NOT_FOUND"
    assert after == without_cache(a.settings.db_url, pool["id"])


def test_a_tenant_removed_through_another_handle_is_not_found(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = handles
    b.api.quotas.set(OP, tenant_id="bench", pool=pool["id"], limits={"vcpu": 1})
    refused = create(a, pool["id"])  # found (and kept), then refused by the quota: nothing made
    assert refused[0] == "QUOTA_EXCEEDED"
    b.api.quotas.clear(OP, tenant_id="bench", pool=pool["id"])
    b.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="bench", revoke=True)
    b.api.tenants.delete(OP, "bench")
    after = create(a, pool["id"])
    assert after[0] == "NOT_FOUND"
    assert after == without_cache(a.settings.db_url, pool["id"])


def test_each_credential_is_authorized_for_itself(
    handles: tuple[Fleet, Fleet, dict[str, Any]], lookups: list[int]
) -> None:
    a, b, pool = handles
    viewer = token(b, "bench", "watcher", role="viewer")
    admin = token(b, "bench", "boss", role="admin")
    assert create(a, pool["id"])[0] == "placed"  # root's admin acting for bench fills the cache
    refused = create(a, pool["id"], viewer)
    assert create(a, pool["id"], admin)[0] == "placed"
    assert (refused[0], lookups) == ("FORBIDDEN", [1])  # both answered from the cache
    assert refused == without_cache(a.settings.db_url, pool["id"], viewer)


def test_a_catalog_write_earlier_in_an_enclosing_transaction_is_seen(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, _, pool = handles
    assert create(a, pool["id"])[0] == "placed"
    with a.transaction() as inside:
        inside.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="bench", revoke=True)
        assert create(inside, pool["id"])[0] == "NOT_FOUND"
    assert create(a, pool["id"]) == without_cache(a.settings.db_url, pool["id"])
