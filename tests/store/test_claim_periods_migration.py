"""Migration 0007: a database at 0006 upgrades with its rows kept and gains claim_periods, which
a resize then fills; run again (a database set back for repair) it changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import HEAD_REVISION
from bcfleet.store.schema_check import differences
from tests.store.test_agent_report_migration import a_guest_at
from tests.store.test_released_schemas import ENGINES, LATER, rows, scratch, set_revision
from tests.support.builders import OP
from tests.support.fleet import run_cli


def clock_advance(fleet: Fleet) -> None:
    assert isinstance(fleet.clock, FakeClock)
    fleet.clock.advance(150)


def has_table(url: str) -> bool:
    engine = make_engine(url)
    try:
        return "claim_periods" in inspect(engine).get_table_names()
    finally:
        engine.dispose()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_0006_database_upgrades_and_keeps_a_resize_s_claim_period(
    engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        instance = a_guest_at(url, "0006")
        assert not has_table(url)

        upgraded = run_cli("db", "upgrade", db=url)
        assert (upgraded.exit_code, upgraded.stdout) == (
            0,
            f"Database at revision {HEAD_REVISION}.\n",
        )
        assert has_table(url)
        made = make_engine(url)
        assert differences(made) == []
        made.dispose()
        fleet = Fleet.open(url, clock=FakeClock(LATER.now()), settings=FleetSettings(db_url=url),
                           ids=IdFactory(seed=8))  # fmt: skip
        try:
            pool = fleet.api.instances.show(OP, instance)["poolId"]
            fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool, name="g1.large",
                                     vcpu=4, memory_gib=8, disk_gib=40)  # fmt: skip
            fleet.api.instances.stop(OP, instance)
            clock_advance(fleet)
            fleet.api.instances.resize(OP, instance, flavor="g1.large")
        finally:
            fleet.close()
        assert rows(url, "SELECT vcpu FROM claim_periods") == [2]

        set_revision(url, "0006")  # run again over a table that exists: nothing to do
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert rows(url, "SELECT memory_gib FROM claim_periods") == [4]
