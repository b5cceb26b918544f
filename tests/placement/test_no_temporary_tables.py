"""The SQLite claim and quota charge every placement sends build no in-memory table: SQLite's
own EXPLAIN of each, on a fleet's schema, holds no OpenEphemeral (an IN list of three values
and a RETURNING each built one on every run). A batch's claim, one statement for the whole
batch, joins its plan's JSON and keeps its one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import TextClause

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.placement import claims, quotas
from tests.support.fleet import T0, open_fleet

PARAMETERS = {"node": "node_x", "vcpu": 2, "mem": 4, "disk": 40, "plan": "{}", "t": "bench",
              "p": "pool_x", "r0": "diskGiB", "n0": 40, "r1": "memoryGiB", "n1": 4,
              "r2": "vcpu", "n2": 2}  # fmt: skip


def _sql(statement: object) -> str:
    clause = statement.statement  # type: ignore[attr-defined]
    assert isinstance(clause, TextClause)
    return clause.text


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param(claims._CLAIM_ALL, id="the-claim"),
        pytest.param(quotas._charge_all(3), id="the-quota-charge"),
    ],
)
def test_the_statement_builds_no_in_memory_table(tmp_path: Path, statement: object) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    fleet: Fleet = open_fleet(url, FakeClock(T0))
    fleet.close()
    connection = sqlite3.connect(tmp_path / "fleet.db")
    try:
        sql = _sql(statement)
        used = {name: value for name, value in PARAMETERS.items() if f":{name}" in sql}
        steps = [row[1] for row in connection.execute(f"EXPLAIN {sql}", used)]
    finally:
        connection.close()
    assert steps and "OpenEphemeral" not in steps
