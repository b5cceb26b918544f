"""The indexes every placement writes: none holds a column a claim updates, none repeats another.

A claim adds to node_resources.allocated and .generation of one host, a quota charge to
quotas.used or quota_stripes.used. An index holding one of them is rewritten by every
placement (SQLite: index pages in every commit; PostgreSQL: the UPDATE cannot be HOT, so it
writes a new entry in every index of the table). A placement also inserts a row into
instances, allocations and events, each index of theirs one more B-tree written; an index
whose columns begin another one's serves nothing the longer one does not. Migration 0002
dropped one of each kind, and an index of instances no query used.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import HEAD_REVISION, alembic_config, ensure_schema, forget_schema
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts
from tests.support.fleet import T0, empty_pg_database, open_fleet

WRITTEN_BY_EVERY_PLACEMENT = {
    "node_resources": {"allocated", "generation"},
    "quotas": {"used"},
    "quota_stripes": {"used"},
}
INSERTED_BY_EVERY_PLACEMENT = ("instances", "allocations", "events")
FREE_INDEX = "ix_node_resources_resource_free"
TENANT_INDEX = "ix_instances_tenant_id"
ALLOCATION_INDEX = "ix_instances_allocation_id"


def index_columns(url: str, table: str) -> dict[str, tuple[str, ...]]:
    """Every index, unique constraint and the primary key of the table, with its columns in order."""
    engine = make_engine(url)
    try:
        found = inspect(engine)
        named = {i["name"] or "": i["column_names"] for i in found.get_indexes(table)}
        for unique in found.get_unique_constraints(table):
            named[unique["name"] or ""] = unique["column_names"]
        named["primary key"] = found.get_pk_constraint(table)["constrained_columns"]
        return {name: tuple(c for c in columns if c) for name, columns in named.items()}
    finally:
        engine.dispose()


def indexed_columns(url: str, table: str) -> dict[str, set[str]]:
    return {name: set(columns) for name, columns in index_columns(url, table).items()}


def test_no_index_holds_a_column_every_placement_writes(any_fleet: Fleet, db_url: str) -> None:
    for table, written in WRITTEN_BY_EVERY_PLACEMENT.items():
        for name, columns in indexed_columns(db_url, table).items():
            assert not columns & written, f"{table}.{name} indexes {sorted(columns & written)}"


def test_no_index_of_a_table_every_placement_inserts_into_begins_another(
    any_fleet: Fleet, db_url: str
) -> None:
    for table in INSERTED_BY_EVERY_PLACEMENT:
        indexes = index_columns(db_url, table)
        for name, columns in indexes.items():
            for other, longer in indexes.items():
                if other != name and len(longer) > len(columns):
                    assert longer[: len(columns)] != columns, f"{table}.{name} begins {other}"


def test_a_tenants_instances_are_still_found_by_an_index(fleet: Fleet) -> None:
    """SQLite's plan for the tenant's instances searches the unique index by its first column."""
    with fleet.engine.connect() as connection:
        plan = " ".join(
            str(row[-1])
            for row in connection.execute(
                text("EXPLAIN QUERY PLAN SELECT id FROM instances WHERE tenant_id = 'acme'")
            )
        )
    assert "USING" in plan and "INDEX" in plan and "(tenant_id=?)" in plan, plan


@pytest.mark.postgres
def test_a_postgresql_claim_updates_the_hosts_rows_in_place(pg_fleet: Fleet) -> None:
    """Every claim's UPDATE is HOT (pg_stat_xact_user_tables counts this transaction's own)."""
    fleet = pg_fleet
    pool = pool_with_hosts(fleet, hosts=1)
    flavor(fleet, pool["id"], "tiny", vcpu=1, memory_gib=1, disk_gib=1)
    with fleet.transaction() as joined:
        placed = [create(joined, pool, "tiny") for _ in range(3)]
        assert joined.session is not None
        updated, in_place = joined.session.execute(
            text(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
                "WHERE relname = 'node_resources'"
            )
        ).one()
    assert [i["state"] for i in placed] == ["running"] * 3
    assert updated == 9  # three rows of the host, three claims
    assert in_place == updated
    invariants_ok(fleet)


def _upgraded_keeps_rows(url: str) -> None:
    """A fleet's database stepped back to 0001 (the index made again) and opened at head."""
    engine = make_engine(url)
    try:
        fleet = open_fleet(url, FakeClock(T0))
        pool = pool_with_hosts(fleet, hosts=2)
        before = fleet.api.hosts.list(OP)["items"]
        fleet.close()
        command.downgrade(alembic_config(engine), "0001")
        assert FREE_INDEX in indexed_columns(url, "node_resources")
        assert {TENANT_INDEX, ALLOCATION_INDEX} <= set(indexed_columns(url, "instances"))
        forget_schema(engine)
        ensure_schema(engine)  # what opening the fleet does with a database behind head
        assert FREE_INDEX not in indexed_columns(url, "node_resources")
        assert not {TENANT_INDEX, ALLOCATION_INDEX} & set(indexed_columns(url, "instances"))
        with engine.connect() as connection:
            stamp = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        assert stamp == HEAD_REVISION
        fleet = open_fleet(url, FakeClock(T0 + timedelta(hours=1)))  # ids of its own
        assert fleet.api.hosts.list(OP)["items"] == before
        flavor(fleet, pool["id"], "tiny", vcpu=1, memory_gib=1, disk_gib=1)
        assert create(fleet, pool, "tiny")["state"] == "running"
        invariants_ok(fleet)
        fleet.close()
    finally:
        engine.dispose()


def test_a_sqlite_fleet_made_before_loses_the_index_and_keeps_its_rows(tmp_path: Path) -> None:
    _upgraded_keeps_rows(f"sqlite:///{tmp_path / 'older.db'}")


@pytest.fixture
def own_pg_database() -> Iterator[str]:
    """An empty PostgreSQL database of this test's own: its schema is stepped back and forth."""
    with empty_pg_database("bcfleet_test_migrate") as url:
        yield url


@pytest.mark.postgres
def test_a_postgresql_fleet_made_before_loses_the_index_and_keeps_its_rows(
    own_pg_database: str,
) -> None:
    _upgraded_keeps_rows(own_pg_database)
