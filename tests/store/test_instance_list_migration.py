"""Migration 0008: a database at 0007 upgrades with its instances kept and gains the listing's
indexes, which instances.list then pages by; run again (a database set back for repair, one
index lost) it makes only what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from bcfleet.store.engine import make_engine
from bcfleet.store.schema_check import differences
from tests.store.test_agent_report_migration import a_guest_at
from tests.store.test_released_schemas import ENGINES, scratch, set_revision
from tests.support.fleet import run_cli

INDEXES = {"ix_instances_search", "ix_instances_created", "ix_instances_state_created_id"}


def indexes(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return {str(i["name"]) for i in inspect(engine).get_indexes("instances")} & INDEXES
    finally:
        engine.dispose()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_0007_database_upgrades_and_gains_the_listing_indexes(
    engine: str, tmp_path: Path
) -> None:
    with scratch(engine, tmp_path) as url:
        instance = a_guest_at(url, "0007")
        assert indexes(url) == set()

        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert indexes(url) == INDEXES
        listed = run_cli("instances", "list", "--sort", "name", "--limit", "5", "--json", db=url)
        assert [i["id"] for i in listed.json()["items"]] == [instance]  # type: ignore[index]

        made = make_engine(url)
        with made.begin() as connection:
            connection.execute(text("DROP INDEX ix_instances_created"))
        made.dispose()
        set_revision(url, "0007")  # run again: the lost index is made, the others are kept
        assert run_cli("db", "upgrade", db=url).exit_code == 0
        assert indexes(url) == INDEXES
        made = make_engine(url)
        assert differences(made) == []
        made.dispose()
