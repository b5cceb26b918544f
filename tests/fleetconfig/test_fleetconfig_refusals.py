"""What the CLI says and leaves behind when it refuses: a FleetConfig given as a saved plan, a
saved plan that is stale or not a plan on a new database, a database in a missing folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.fleet import run_cli
from tests.support.fleetconfig import EXAMPLE


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HCLOUD_TOKEN", "test-token")
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    return tmp_path


def test_a_fleetconfig_given_as_a_plan_is_never_told_to_be_overwritten(here: Path) -> None:
    config = (here / "fleet.yaml").read_bytes()
    refused = run_cli("--db", "sqlite:///f.db", "apply", "fleet.yaml")
    assert refused.exit_code == 1
    assert "INVALID_INPUT: fleet.yaml is not a saved plan" in refused.stderr
    assert "`fleet apply -f fleet.yaml`" in refused.stderr
    assert "--out fleet.plan.json` and run `fleet apply fleet.plan.json`" in refused.stderr
    assert "--out fleet.yaml" not in refused.stderr
    # the way out it names works, and leaves the FleetConfig as it was
    planned = run_cli(
        "--db", "sqlite:///f.db", "plan", "-f", "fleet.yaml", "--out", "fleet.plan.json"
    )
    assert planned.exit_code in (0, 2), planned.stderr
    applied = run_cli("--db", "sqlite:///f.db", "apply", "fleet.plan.json")
    assert applied.exit_code == 0, applied.stderr
    assert (here / "fleet.yaml").read_bytes() == config


def test_a_refused_saved_plan_creates_no_database(here: Path) -> None:
    (here / "notes.json").write_text("{}")
    refused = run_cli("--db", "sqlite:///new.db", "apply", "notes.json")
    assert refused.exit_code == 1 and "is not a saved plan" in refused.stderr
    assert "Creating a new fleet" not in refused.stderr
    assert not list(here.glob("new.db*"))


def test_a_stale_saved_plan_on_a_new_database_leaves_no_file(here: Path) -> None:
    assert run_cli("--db", "sqlite:///old.db", "tenants", "create", "acme").exit_code == 0
    made = run_cli("--db", "sqlite:///old.db", "plan", "-f", "fleet.yaml", "--out", "p.json")
    assert made.exit_code in (0, 2), made.stderr
    stale = run_cli("--db", "sqlite:///new.db", "apply", "p.json")
    assert stale.exit_code == 4, stale.stderr
    assert "STALE_PLAN" in stale.stderr
    assert "Removed the new fleet in new.db again" in stale.stderr
    assert not list(here.glob("new.db*"))


def test_a_database_in_a_missing_folder_is_refused_before_anything_is_said(here: Path) -> None:
    for args in (
        ("tenants", "create", "acme"),
        ("apply", "-f", "fleet.yaml", "--yes"),
        ("db", "upgrade"),
    ):
        said = run_cli("--db", "sqlite:///missing/dir/x.db", *args)
        assert said.exit_code == 1, args
        assert said.stderr.startswith("error: INVALID_INPUT: --db sqlite:///missing/dir/x.db: "
                                      "the folder 'missing/dir' does not exist"), said.stderr  # fmt: skip
        assert "Creating" not in said.stderr
    as_json = run_cli("--json", "--db", "sqlite:///missing/dir/x.db", "tenants", "create", "acme")
    error = json.loads(as_json.stdout)["error"]
    assert (error["code"], error["details"]["reason"]) == ("INVALID_INPUT", "bad_database")
    (here / "afile").write_text("")
    under_a_file = run_cli("--db", "sqlite:///afile/x.db", "tenants", "create", "acme")
    assert "the folder 'afile' is not a folder" in under_a_file.stderr
    assert not (here / "missing").exists()
