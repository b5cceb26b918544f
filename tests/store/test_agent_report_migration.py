"""Migration 0006: a database at 0005 upgrades with its rows kept and gains the columns a host
agent's reports live in; run again (a database set back for repair) it changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect

from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import HEAD_REVISION, alembic_config
from bcfleet.store.schema_check import differences
from tests.store.test_released_schemas import ENGINES, LATER, rows, scratch, set_revision
from tests.support.builders import OP, hosted_pool, inventory
from tests.support.fleet import open_fleet, run_cli
from tests.support.http import PLACEMENT

NEW = {"instances": {"agent_conditions", "balloon_bytes"}, "hosts": {"agent_health"}}


def columns(url: str) -> dict[str, set[str]]:
    engine = make_engine(url)
    try:
        found = inspect(engine)
        return {t: {c["name"] for c in found.get_columns(t)} & NEW[t] for t in NEW}
    finally:
        engine.dispose()


def a_fleet_with_a_guest(url: str) -> str:
    fleet = open_fleet(url, LATER)
    try:
        pool = hosted_pool(fleet)
        fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-01",
                              labels=PLACEMENT)  # fmt: skip
        fleet.api.hosts.report(OP, host="fra-01", inventory=inventory())
        run_vps_hosts(fleet, fleet.now())
        fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="g1.small",
                                 vcpu=2, memory_gib=4, disk_gib=40)  # fmt: skip
        made = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"],
                                          flavor="g1.small")  # fmt: skip
        return str(made["id"])
    finally:
        fleet.close()


def a_guest_at(url: str, revision: str) -> str:
    """A database at head with a placed guest, then set back to `revision`: the guest's id."""
    assert run_cli("db", "upgrade", db=url).exit_code == 0
    instance = a_fleet_with_a_guest(url)
    made = make_engine(url)
    command.downgrade(alembic_config(made), revision)
    made.dispose()
    return instance


@pytest.mark.parametrize("engine", ENGINES)
def test_a_0005_database_upgrades_with_its_rows_and_takes_agent_reports(
    engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        instance = a_guest_at(url, "0005")
        assert columns(url) == {"instances": set(), "hosts": set()}
        assert rows(url, "SELECT id FROM instances") == [instance]

        upgraded = run_cli("db", "upgrade", db=url)
        assert (upgraded.exit_code, upgraded.stdout) == (
            0,
            f"Database at revision {HEAD_REVISION}.\n",
        )
        assert columns(url) == NEW
        made = make_engine(url)
        assert differences(made) == []
        made.dispose()
        fleet = open_fleet(url, LATER)
        try:
            assert "agentConditions" not in fleet.api.instances.show(OP, instance)  # NULL: none
            assert "health" not in fleet.api.hosts.show(OP, host="fra-01")
            condition = {"type": "StoppedOutside", "reason": "Crashed", "message": "crashed"}
            fleet.api.hosts.report_guests(
                OP, host="fra-01", health={"state": "ok"},
                guests=[{"id": instance, "conditions": [condition], "balloonBytes": 1 << 32}],
            )  # fmt: skip
            shown = fleet.api.instances.show(OP, instance)
            assert (len(shown["agentConditions"]), shown["balloonBytes"]) == (1, 1 << 32)
        finally:
            fleet.close()

        set_revision(url, "0005")  # run again over columns that exist: nothing to do
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert rows(url, "SELECT balloon_bytes FROM instances") == [1 << 32]
