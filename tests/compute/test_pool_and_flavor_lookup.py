"""The create path's one-statement lookup of pool and flavor answers as find_pool then find_flavor would."""

from __future__ import annotations

import pytest
from sqlmodel import Session, SQLModel

from bcfleet.api.auth import LOCAL_OPERATOR, Actor, acting_for
from bcfleet.api.lookup import find_flavor, find_pool, find_pool_and_flavor
from bcfleet.clock import parse_time
from bcfleet.errors import NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.store.models import Flavor, Pool
from tests.support.builders import OP, flavor, hosted_pool


def _as(fleet: Fleet, tenant: str) -> Actor:
    with fleet.read() as session:
        root = Actor("root", "admin", None, (), True)
        return acting_for(session, root, tenant) if tenant != "root" else root


def _fields(obj: SQLModel) -> dict[str, object]:
    """Every column's value as the object holds it (types included)."""
    return {name: (type(value), value) for name, value in obj.model_dump().items()}


def _both_ways(fleet: Fleet, actor: Actor, pool_ref: str, flavor_ref: str) -> list[object]:
    """What each lookup answers: (pool id, flavor id, their fields), or the NOT_FOUND's message."""
    answers: list[object] = []
    for joined in (True, False):
        with fleet.read() as session:
            try:
                if joined:
                    pool, row = find_pool_and_flavor(session, actor, pool_ref, flavor_ref)
                else:
                    pool = find_pool(session, actor, pool_ref)
                    row = find_flavor(session, pool, flavor_ref)
                answers.append((pool.id, row.id, _fields(pool), _fields(row)))
            except NotFoundError as error:
                answers.append(str(error))
    return answers


def test_the_joined_lookup_answers_like_the_two_lookups(any_fleet: Fleet) -> None:
    fleet = any_fleet
    fleet.api.tenants.create(OP, "other")
    pool = hosted_pool(fleet, offered_to=("acme",))
    small = flavor(fleet, pool["id"], "g1.small")
    gone = flavor(fleet, pool["id"], "g1.gone")
    fleet.api.instances.create(
        LOCAL_OPERATOR, tenant_id="root", pool_id=pool["id"], flavor="g1.gone"
    )
    fleet.api.flavors.delete(OP, tenant_id="root", pool_id=pool["id"], name="g1.gone")  # archived
    cases = [
        ("root", pool["id"], "g1.small"),
        ("root", pool["name"], small["id"]),
        ("acme", pool["name"], "g1.small"),  # offered
        ("other", pool["id"], "g1.small"),  # neither owner nor offered: no such pool
        ("acme", pool["id"], "g1.gone"),  # archived
        ("acme", pool["id"], gone["id"]),
        ("acme", pool["id"], "g1.none"),
        ("acme", "pool_none", "g1.small"),
    ]
    for tenant, pool_ref, flavor_ref in cases:
        joined, apart = _both_ways(fleet, _as(fleet, tenant), pool_ref, flavor_ref)
        assert joined == apart, (tenant, pool_ref, flavor_ref)
    assert _both_ways(fleet, _as(fleet, "acme"), pool["id"], "g1.small")[0][:2] == (
        pool["id"],
        small["id"],
    )
    with pytest.raises(NotFoundError):
        fleet.api.instances.create(OP, tenant_id="other", pool_id=pool["id"], flavor="g1.small")


def test_the_objects_it_reads_are_the_sessions_own_and_their_changes_are_saved(
    any_fleet: Fleet,
) -> None:
    pool = hosted_pool(any_fleet)
    flavor(any_fleet, pool["id"], "g1.small")
    root = Actor("root", "admin", None, (), True)
    with any_fleet.write() as session:
        held = session.get(Pool, pool["id"])
        found, row = find_pool_and_flavor(session, root, pool["id"], "g1.small")
        assert found is held  # the object the session holds, as a query answers it
        again = find_pool_and_flavor(session, root, pool["id"], "g1.small")[1]
        assert again is row
        row.vcpu = 7  # a change to an object it read is flushed as usual
    with any_fleet.read() as session:
        stored = session.get(Flavor, row.id)
        assert stored is not None and stored.vcpu == 7


def test_for_reading_only_it_answers_copies_unless_the_session_holds_the_object(
    any_fleet: Fleet,
) -> None:
    """instances.create reads the pool and flavor only: copies outside the session (no
    loaded-row bookkeeping), or the session's own objects, pending changes and all."""
    pool = hosted_pool(any_fleet)
    made = flavor(any_fleet, pool["id"], "g1.small")
    root = Actor("root", "admin", None, (), True)
    with any_fleet.write() as session:
        found, row = find_pool_and_flavor(session, root, pool["id"], "g1.small", reading_only=True)
        assert found not in session and row not in session
        assert (found.id, found.name, found.kind, found.created_at) == (
            pool["id"], pool["name"], pool["kind"], parse_time(pool["createdAt"])
        )  # fmt: skip
        assert (row.id, row.vcpu, row.memory_gib, row.archived) == (made["id"], 2, 4, False)
        row.vcpu = 7  # a copy: not saved
        held = session.get(Flavor, made["id"])
        assert held is not None
        held.disk_gib = 41  # pending in the session
        again = find_pool_and_flavor(session, root, pool["id"], "g1.small", reading_only=True)[1]
        assert again is held and again.disk_gib == 41
    with any_fleet.read() as session:
        stored = session.get(Flavor, made["id"])
        assert stored is not None and (stored.vcpu, stored.disk_gib) == (2, 41)


def _in_pipeline(session: Session) -> bool:
    """Whether the session's connection waits in libpq's pipeline mode (never on SQLite)."""
    pgconn = getattr(session.connection().connection.driver_connection, "pgconn", None)
    return pgconn is not None and pgconn.pipeline_status != 0


def test_the_acting_tenants_check_goes_with_the_lookup_and_its_not_found_comes_first(
    any_fleet: Fleet,
) -> None:
    postgres = any_fleet.engine.dialect.name == "postgresql"
    pool = hosted_pool(any_fleet, offered_to=("acme",))
    flavor(any_fleet, pool["id"], "g1.small")
    area = any_fleet.api.instances
    with any_fleet.write() as session:
        actor, confirm = area.start_actor(session, LOCAL_OPERATOR, "acme")
        assert actor.tenant_id == "acme"
        assert _in_pipeline(session) is postgres  # the check waits for the lookup
        found, row = find_pool_and_flavor(
            session, actor, pool["id"], "g1.small", before_reading=confirm
        )
        assert (found.id, row.name) == (pool["id"], "g1.small")
        assert not _in_pipeline(session)
    for pool_ref in (pool["id"], "pool_none"):  # the tenant's NOT_FOUND, whatever the pool
        with pytest.raises(NotFoundError) as missing:
            area.create(LOCAL_OPERATOR, tenant_id="ghost", pool_id=pool_ref, flavor="g1.small")
        assert missing.value.details == {"tenant": "ghost"}
    assert any_fleet.api.instances.list(OP, tenant_id="acme")["items"] == []
