"""Migration 0009 and the fresh schema: the catalog revision's counter and the triggers that bump
it on every INSERT, UPDATE and DELETE of tenants, pools, flavors and pool_offers, on both engines;
a populated 0008 database upgrades to them, and running the migration again keeps the count."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from bcfleet.store.catalog_revision import CATALOG_TABLES, trigger_names
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import HEAD_REVISION
from bcfleet.store.schema_check import differences
from tests.store.test_agent_report_migration import a_guest_at
from tests.store.test_released_schemas import ENGINES, LATER, rows, scratch, set_revision
from tests.support.builders import OP
from tests.support.fleet import open_fleet, run_cli

# Each write by hand to a catalog table, in order; each must bump the revision.
WRITES = [
    "INSERT INTO tenants (id, name, created_at, managed) VALUES ('t9', 'T9', '2026-12-06', false)",
    "UPDATE tenants SET name = 'Tee nine' WHERE id = 't9'",
    "INSERT INTO pools (id, name, kind, owner_tenant_id, overcommit, host_reserve, created_at,"
    " version, managed) VALUES ('pool_9', 'p9', 'vps-host', 't9', '{}', '{}', '2026-12-06', 1,"
    " false)",
    "INSERT INTO pool_offers (pool_id, tenant_id) VALUES ('pool_9', 't9')",
    "UPDATE pools SET name = 'p9b' WHERE id = 'pool_9'",
    "UPDATE pool_offers SET tenant_id = 't9' WHERE pool_id = 'pool_9'",
    "DELETE FROM pool_offers WHERE pool_id = 'pool_9'",
    "INSERT INTO flavors (id, pool_id, name, vcpu, memory_gib, disk_gib, gpus, archived, version,"
    " created_at, updated_at, managed) VALUES ('flv_9', 'pool_9', 'f9', 2, 4, 40, 0, false, 1,"
    " '2026-12-06', '2026-12-06', false)",
    "UPDATE flavors SET archived = true WHERE id = 'flv_9'",
    "DELETE FROM flavors WHERE id = 'flv_9'",
    "DELETE FROM pools WHERE id = 'pool_9'",
    "DELETE FROM tenants WHERE id = 't9'",
]


def triggers(url: str) -> set[str]:
    """The names of the database's triggers on the catalog tables."""
    sqlite = url.startswith("sqlite")
    query = (
        "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        if sqlite
        else "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
    )
    return {str(name) for name in rows(url, query)}


def expected_triggers(url: str) -> set[str]:
    sqlite = url.startswith("sqlite")
    return {name for table in CATALOG_TABLES for name in trigger_names(table, sqlite)}


def revision(url: str) -> int:
    return int(rows(url, "SELECT revision FROM catalog_revision")[0])


def each_write_bumps(url: str) -> None:
    """Every write of WRITES, each in a transaction of its own and of one row, raises the
    revision by one."""
    engine = make_engine(url)
    try:
        for statement in WRITES:
            before = revision(url)
            with engine.begin() as connection:
                connection.execute(text(statement))
            assert revision(url) == before + 1, statement
    finally:
        engine.dispose()


def test_the_fresh_schema_bumps_the_revision_on_every_catalog_write(db_url: str) -> None:
    open_fleet(db_url, LATER).close()  # the schema create_fresh builds
    assert triggers(db_url) >= expected_triggers(db_url)
    each_write_bumps(db_url)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_populated_0008_database_upgrades_to_the_catalog_revision(
    engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        instance = a_guest_at(url, "0008")
        assert triggers(url) & expected_triggers(url) == set()
        assert rows(url, "SELECT id FROM instances") == [instance]

        upgraded = run_cli("db", "upgrade", db=url)
        assert (upgraded.exit_code, upgraded.stdout) == (
            0,
            f"Database at revision {HEAD_REVISION}.\n",
        )
        assert triggers(url) >= expected_triggers(url)
        made = make_engine(url)
        assert differences(made) == []
        made.dispose()
        assert revision(url) == 0
        fleet = open_fleet(url, LATER)
        try:
            pool = fleet.api.instances.show(OP, instance)["poolId"]
            again = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool,
                                               flavor="g1.small")  # fmt: skip
            assert again["state"] == "running"
            fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool, name="g1.large",
                                     vcpu=4, memory_gib=8, disk_gib=40)  # fmt: skip
        finally:
            fleet.close()
        assert revision(url) == 1
        each_write_bumps(url)

        counted = revision(url)
        set_revision(url, "0008")  # run again: nothing to add, and the count is kept
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert revision(url) == counted
        assert triggers(url) >= expected_triggers(url)
        each_write_bumps(url)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_database_lacking_a_trigger_is_refused_and_repaired_as_advised(
    engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        sqlite = url.startswith("sqlite")
        dropped = trigger_names("pools", sqlite)[0]
        made = make_engine(url)
        with made.begin() as connection:
            connection.execute(text(f"DROP TRIGGER {dropped}" + ("" if sqlite else " ON pools")))
        made.dispose()

        as_json = run_cli("--json", "db", "upgrade", db=url)
        error = as_json.json()["error"]  # type: ignore[index]
        assert (as_json.exit_code, error["code"]) == (1, "SCHEMA_MISMATCH")
        assert error["details"]["differences"] == [f"trigger {dropped} on pools is missing"]

        set_revision(url, "0002")  # what the message says to do
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert triggers(url) >= expected_triggers(url)
        each_write_bumps(url)
