"""`fleet tui` and `fleet demo` as commands: options, and the demo printing when it has no terminal."""

from __future__ import annotations

import json
from pathlib import Path

from bcfleet.cli.common import reset_state
from bcfleet.cli.tui import dashboard
from bcfleet.fleet import Fleet
from tests.support.fleet import run_cli


def test_fleet_tui_takes_the_documented_options() -> None:
    result = run_cli("tui", "--help")
    assert result.exit_code == 0
    for option in ("--db", "--read-only", "--refresh", "--tenant"):
        assert option in result.stdout


def test_the_dashboard_gets_the_commands_options(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    Fleet.open(db).close()
    reset_state().db = db
    app = dashboard(read_only=True, refresh=5.0, tenant="acme")
    assert (app.read_only, app.refresh_seconds, app.tenant) == (True, 5.0, "acme")
    assert app.freeze_heap  # the command's process keeps its long-lived objects out of GC
    assert app.source.describe() == db


def test_demo_without_a_terminal_prints_the_fleet_as_no_tui_does(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    result = run_cli("demo", "--hosts", "10", db=db)
    assert result.exit_code == 0, result.stderr
    assert "Demo fleet in" in result.stdout
    assert "gpu-burst" in result.stdout  # the workloads' pool: the demo is populated


def test_demo_no_tui(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    result = run_cli("demo", "--no-tui", "--hosts", "10", db=db)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().endswith("hosts in 3 pools.")


def test_demo_leaves_a_database_that_holds_a_fleet_alone(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    assert run_cli("tenants", "create", "keepme", db=db).exit_code == 0
    result = run_cli("--json", "demo", "--no-tui", "--hosts", "3", db=db)
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "CONFLICT"
    assert error["details"]["found"] == {"tenants": 1}
    assert "--reset" in error["message"]
    listed = json.loads(run_cli("--json", "tenants", "list", db=db).stdout)["items"]
    assert [t["id"] for t in listed] == ["keepme", "root"]  # nothing touched


def test_demo_reset_replaces_the_fleet_and_says_what_it_found(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    assert run_cli("tenants", "create", "keepme", db=db).exit_code == 0
    result = run_cli("demo", "--no-tui", "--reset", "--hosts", "10", db=db)
    assert result.exit_code == 0, result.stderr
    assert "Replaced the fleet" in result.stderr and "1 tenants" in result.stderr
    listed = json.loads(run_cli("--json", "tenants", "list", db=db).stdout)["items"]
    assert "keepme" not in [t["id"] for t in listed]


def test_demo_twice_does_not_rebuild_over_the_first(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    assert run_cli("demo", "--no-tui", "--hosts", "10", db=db).exit_code == 0
    again = run_cli("demo", "--no-tui", "--hosts", "10", db=db)
    assert again.exit_code == 1 and "holds a fleet" in again.stderr
