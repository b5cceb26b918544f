"""Released schemas: a database made by each release upgrades to today's schema with its rows
readable and its jobs running, on SQLite and PostgreSQL; a database whose revision says more
than its tables hold is refused by `fleet db upgrade`, with what differs and what to do."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic import command
from sqlalchemy import inspect, text

from bcfleet.clock import FakeClock
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import HEAD_REVISION, alembic_config
from bcfleet.store.schema_check import differences
from tests.support.builders import OP
from tests.support.fleet import empty_pg_database, open_fleet, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "schemas"
RELEASES = [  # tests/store/fixtures/schemas/README.md says what each holds
    pytest.param("1b94547", id="2026-11-30-first-tables"),
    pytest.param("a8a3909", id="2026-11-30-webhooks-32-bit-counters"),
    pytest.param("565f1bb", id="2026-12-01-job-faults-no-stripes"),
    pytest.param("ffc3c94", id="2026-12-01-last-0001"),
    pytest.param("d9931e4", id="2026-12-05-0002-current"),
]
ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
LATER = FakeClock(datetime(2026, 12, 7, tzinfo=UTC))


@contextmanager
def restored(release: str, engine: str, tmp_path: Path) -> Iterator[str]:
    """The release's fixture as a database of its own: its URL."""
    if engine == "sqlite":
        path = tmp_path / "fleet.db"
        path.write_bytes(gzip.decompress((FIXTURES / f"{release}.db.gz").read_bytes()))
        yield f"sqlite:///{path}"
        return
    dump = gzip.decompress((FIXTURES / f"{release}.pg.sql.gz").read_bytes()).decode()
    with empty_pg_database("bcfleet_released") as url:
        with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as connection:
            connection.execute(dump.encode())  # a plain dump: many statements, no parameters
        yield url


def rows(url: str, sql: str, table: str | None = None) -> list[Any]:
    """The first column of the query's rows; none when `table` is not in the database."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            if table is not None and table not in inspect(connection).get_table_names():
                return []
            return [row[0] for row in connection.execute(text(sql))]
    finally:
        engine.dispose()


def set_revision(url: str, revision: str) -> None:
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    engine.dispose()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("release", RELEASES)
def test_a_database_of_each_release_upgrades_with_its_rows_readable(
    release: str, engine: str, tmp_path: Path
) -> None:
    with restored(release, engine, tmp_path) as url:
        tenants = rows(url, "SELECT id FROM tenants ORDER BY id")
        instances = rows(url, "SELECT id FROM instances ORDER BY id", "instances")
        seqs = rows(url, "SELECT seq FROM events ORDER BY seq")
        assert tenants and seqs, "the fixture holds a fleet"

        upgraded = run_cli("db", "upgrade", db=url)
        assert (upgraded.exit_code, upgraded.stdout) == (
            0,
            f"Database at revision {HEAD_REVISION}.\n",
        ), upgraded.stderr
        engine_ = make_engine(url)
        assert differences(engine_) == []
        engine_.dispose()

        fleet = open_fleet(url, LATER)
        try:
            api = fleet.api
            assert sorted(t["id"] for t in api.tenants.list(OP)["items"]) == tenants
            listed = api.instances.list(OP, include_deleted=True, limit=500)["items"]
            assert sorted(i["id"] for i in listed) == instances
            assert [e["seq"] for e in api.events.list(OP, limit=1000)["items"]] == seqs
            for job in ("vps.hosts", "reservations.lifecycle", "webhooks"):
                run = api.jobs.run(OP, job)
                assert (run["outcome"], run["error"]) == ("ok", None), run
            api.tenants.create(OP, "initech", name="Initech")
            api.pools.create(OP, tenant_id="initech", name="fresh", kind="vps-host")
            newest = api.events.list(OP, after=seqs[-1])["items"]
            assert [e["type"] for e in newest][-1:] == ["pool.created"]
        finally:
            fleet.close()

        set_revision(url, "0002")  # the repair finds nothing left to do the second time
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert rows(url, "SELECT id FROM tenants ORDER BY id") == sorted([*tenants, "initech"])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_database_the_code_before_called_upgraded_is_repaired(
    engine: str, tmp_path: Path
) -> None:
    """The issue's case: a week-old fleet stepped to 0002 by the code before 0003 existed."""
    with restored("a8a3909", engine, tmp_path) as url:
        made = make_engine(url)
        command.upgrade(alembic_config(made), "0002")
        assert "job_faults" not in inspect(made).get_table_names()

        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert differences(made) == []
        made.dispose()
        fleet = open_fleet(url, LATER)
        try:
            runs = fleet.api.jobs.tick(OP)
            assert [(r["job"], r["outcome"]) for r in runs if r["outcome"] != "ok"] == []
            assert len(runs) == 7
        finally:
            fleet.close()


@pytest.mark.postgres
def test_counters_of_a_32_bit_release_are_64_bit_after_the_upgrade(tmp_path: Path) -> None:
    with restored("a8a3909", "postgres", tmp_path) as url:
        widths = (
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_name = 'events' AND column_name = 'seq'"
        )
        sequence = (
            "SELECT data_type FROM information_schema.sequences"
            " WHERE sequence_name = 'events_seq_seq'"
        )
        assert (rows(url, widths), rows(url, sequence)) == (["integer"], ["integer"])
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert (rows(url, widths), rows(url, sequence)) == (["bigint"], ["bigint"])


def test_a_reservation_made_before_node_ids_has_none_after_the_upgrade(tmp_path: Path) -> None:
    with restored("1b94547", "sqlite", tmp_path) as url:
        engine = make_engine(url)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO reservations (id, tenant_id, pool_id, gpus, nodes, binding, spot,"
                    " state, requested_start, duration_seconds, conditions, quota_charged,"
                    " created_at, updated_at) SELECT 'rsv_old', 'acme', id, 1, 0, 'pool', 0,"
                    " 'pending', :t, 3600, '[]', 0, :t, :t FROM pools WHERE kind = 'vps-host'"
                    " LIMIT 1"
                ),
                {"t": "2026-11-30 12:00:00"},
            )
        engine.dispose()
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert rows(url, "SELECT node_ids FROM reservations WHERE id = 'rsv_old'") == ["[]"]


@contextmanager
def scratch(engine: str, tmp_path: Path) -> Iterator[str]:
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path / 'fleet.db'}"
        return
    with empty_pg_database("bcfleet_lying") as url:
        yield url


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("behind_alembics_back", "named"),
    [
        pytest.param("DROP TABLE job_faults", "table job_faults is missing", id="table-dropped"),
        pytest.param(
            "ALTER TABLE provider_accounts DROP COLUMN sealed_token",
            "column provider_accounts.sealed_token is missing",
            id="column-dropped",
        ),
        pytest.param(
            "DROP INDEX ix_events_type",
            "index ix_events_type on events (type) is missing",
            id="index-dropped",
        ),
    ],
)
def test_a_database_whose_revision_lies_is_refused_with_what_to_do(
    behind_alembics_back: str, named: str, engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        made = make_engine(url)
        with made.begin() as connection:
            connection.execute(text(behind_alembics_back))
        made.dispose()

        refused = run_cli("db", "upgrade", db=url)
        assert refused.exit_code == 1
        assert (
            f"SCHEMA_MISMATCH: The database says it is at revision {HEAD_REVISION}"
            in refused.stderr
        )
        assert named in refused.stderr
        assert "UPDATE alembic_version SET version_num = '0002'" in refused.stderr
        assert "Traceback" not in refused.stderr
        as_json = run_cli("--json", "db", "upgrade", db=url)
        error = as_json.json()["error"]  # type: ignore[index]
        assert (as_json.exit_code, error["code"]) == (1, "SCHEMA_MISMATCH")
        assert error["details"]["differences"] == [named]

        set_revision(url, "0002")  # what the message says to do
        assert run_cli("db", "upgrade", db=url).exit_code == 0
