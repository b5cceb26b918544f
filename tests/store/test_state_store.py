"""The state store: migrations match the tables, writers bump the revision, failed calls change nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlmodel import SQLModel

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.store.catalog_revision import CATALOG_REVISION
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import alembic_config, head_revision, schema_revision
from bcfleet.store.uow import current_revision as state_revision
from tests.support.builders import hosted_pool

OP = LOCAL_OPERATOR


def _dump(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table: 'changes nothing' means this is equal before and after."""
    engine = make_engine(url)
    with engine.connect() as connection:
        dump = {
            t.name: sorted(tuple(map(str, r)) for r in connection.execute(t.select()).all())
            for t in SQLModel.metadata.sorted_tables
        }
    engine.dispose()
    return dump


def _models_tables(_obj: object, name: object, type_: str, reflected: bool, _to: object) -> bool:
    """Every table but the catalog revision's counter, which no model holds (its triggers and
    the fresh schema's are compared in test_catalog_revision_migration.py)."""
    return not (type_ == "table" and reflected and name == CATALOG_REVISION.name)


def _compared(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"include_object": _models_tables})
    return list(compare_metadata(context, SQLModel.metadata))


def test_migrations_build_the_same_schema_as_the_tables(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'migrated.db'}")
    command.upgrade(alembic_config(engine), "head")
    with engine.connect() as connection:
        diffs = _compared(connection)
    assert diffs == [], f"the tables changed without a migration: {diffs}"
    assert schema_revision(engine) == head_revision(engine)


@pytest.mark.postgres
def test_migrations_on_postgres(pg_database: str) -> None:
    engine = make_engine(pg_database)
    with engine.connect() as connection:
        diffs = _compared(connection)
    assert diffs == []
    engine.dispose()


def test_a_fresh_sqlite_file_gets_its_schema_on_its_first_write(tmp_path: Path) -> None:
    db = tmp_path / "first.db"
    result = subprocess.run(
        [sys.executable, "-m", "bcfleet", "tenants", "create", "acme", "--db", str(db)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    engine = make_engine(f"sqlite:///{db}")
    assert {"pools", "flavors", "alembic_version"} <= set(inspect(engine).get_table_names())
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert connection.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL


def test_db_upgrade_command(tmp_path: Path) -> None:
    from tests.support.fleet import run_cli

    result = run_cli("db", "upgrade", "--json", db=f"sqlite:///{tmp_path / 'up.db'}")
    assert result.exit_code == 0, result.stderr
    assert result.json() == {
        "revision": head_revision(make_engine(f"sqlite:///{tmp_path / 'up.db'}"))
    }


def test_every_write_bumps_the_revision(any_fleet: Fleet) -> None:
    with any_fleet.read() as session:
        before = state_revision(session)
    any_fleet.api.tenants.create(OP, "acme")
    with any_fleet.read() as session:
        after = state_revision(session)
    assert after > before


def test_a_failed_call_changes_nothing(any_fleet: Fleet, db_url: str) -> None:
    pool = hosted_pool(any_fleet)
    any_fleet.api.flavors.create(
        OP, tenant_id="root", pool_id=pool["id"], name="g1.small", vcpu=2, memory_gib=4, disk_gib=40
    )
    before = _dump(db_url)
    with pytest.raises(ConflictError):
        any_fleet.api.flavors.create(
            OP,
            tenant_id="root",
            pool_id=pool["id"],
            name="g1.small",
            vcpu=2,
            memory_gib=4,
            disk_gib=40,
        )
    with pytest.raises(InvalidInputError):
        any_fleet.api.flavors.create(
            OP, tenant_id="root", pool_id=pool["id"], name="bad", vcpu=-1, memory_gib=4, disk_gib=40
        )
    assert _dump(db_url) == before


def test_concurrent_creates_of_one_name_give_one_flavor_and_conflicts(any_fleet: Fleet) -> None:
    from concurrent.futures import ThreadPoolExecutor

    pool = hosted_pool(any_fleet)

    def attempt(_: int) -> str:
        try:
            any_fleet.api.flavors.create(
                OP,
                tenant_id="root",
                pool_id=pool["id"],
                name="race",
                vcpu=1,
                memory_gib=1,
                disk_gib=1,
            )
            return "created"
        except ConflictError:
            return "conflict"

    with ThreadPoolExecutor(max_workers=4) as pool_executor:
        outcomes = sorted(pool_executor.map(attempt, range(8)))
    assert outcomes.count("created") == 1 and outcomes.count("conflict") == 7


def test_a_job_tick_that_changes_nothing_leaves_the_revision(any_fleet: Fleet) -> None:
    """Saved plans stay valid while the scheduler runs: only transactions that change a row bump."""
    from bcfleet.jobs.vps_hosts import run_vps_hosts
    from tests.support.builders import host, inventory

    pool = hosted_pool(any_fleet)
    host(any_fleet, pool["id"], "h1", inventory())
    run_vps_hosts(any_fleet, any_fleet.now())
    with any_fleet.read() as session:
        before = state_revision(session)
    run_vps_hosts(any_fleet, any_fleet.now())
    with any_fleet.read() as session:
        assert state_revision(session) == before
    any_fleet.api.pools.update(OP, tenant_id="root", pool=pool["id"], overcommit={"vcpu": 2})
    run_vps_hosts(any_fleet, any_fleet.now())
    with any_fleet.read() as session:
        assert state_revision(session) > before
