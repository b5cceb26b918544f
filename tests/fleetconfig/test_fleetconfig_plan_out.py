"""`fleet plan --out`: never over the database, any SQLite file or a file that is not a plan
(without --force), and written whole or not at all."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.fleet import run_cli
from tests.support.fleetconfig import EXAMPLE, settle_sqlite, sha256_file


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding fleet.example.yaml and the fleet f.db made from it, as the cwd."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "fleet.example.yaml")
    made = run_cli("--db", "sqlite:///f.db", "apply", "-f", "fleet.example.yaml", "--yes")
    assert made.exit_code == 0, made.stderr
    settle_sqlite(tmp_path / "f.db")
    return tmp_path


def plan_out(out: str, *extra: str) -> tuple[int, str]:
    result = run_cli(
        "--db", "sqlite:///f.db", "plan", "-f", "fleet.example.yaml", "--out", out, *extra
    )
    return result.exit_code, result.stderr


def test_the_issues_command_refuses_to_write_the_plan_over_the_database(here: Path) -> None:
    before = sha256_file(here / "f.db")
    code, err = plan_out("f.db")
    assert code == 1
    assert "error: INVALID_INPUT: --out f.db: that is the database this plan was made" in err
    assert "would destroy the fleet" in err
    assert sha256_file(here / "f.db") == before
    assert run_cli("--db", "sqlite:///f.db", "pools", "list").exit_code == 0  # still a fleet


@pytest.mark.parametrize(
    "out",
    [
        pytest.param("./f.db", id="the-same-file-spelled-otherwise"),
        pytest.param("link-to-db", id="a-symbolic-link-to-it"),
        pytest.param("hard-link-to-db", id="a-hard-link-to-it"),
        pytest.param("f.db-wal", id="its-write-ahead-log"),
        pytest.param("f.db-journal", id="its-rollback-journal"),
        pytest.param("--force", id="even-with-force"),
    ],
)
def test_the_database_is_refused_however_it_is_named(here: Path, out: str) -> None:
    (here / "link-to-db").symlink_to(here / "f.db")
    os.link(here / "f.db", here / "hard-link-to-db")
    before = sha256_file(here / "f.db")
    code, err = plan_out("f.db", "--force") if out == "--force" else plan_out(out)
    assert code == 1
    assert "that is the database" in err and "nothing was written" in err
    assert sha256_file(here / "f.db") == before


def test_any_sqlite_file_is_refused_even_with_force(here: Path) -> None:
    other = here / "notes.txt"  # the header says what it is, not the name
    shutil.copy(here / "f.db", other)
    for extra in ((), ("--force",)):
        code, err = plan_out("notes.txt", *extra)
        assert code == 1
        assert "that file is an SQLite database" in err
    assert sha256_file(other) == sha256_file(here / "f.db")


def test_a_file_that_is_not_a_plan_is_replaced_only_with_force(here: Path) -> None:
    notes = here / "notes.txt"
    notes.write_text("my notes\n")
    code, err = plan_out("notes.txt")
    assert code == 1
    assert "that file exists and is not a saved plan" in err and "--force" in err
    assert notes.read_text() == "my notes\n"
    assert plan_out("notes.txt", "--force")[0] == 0
    assert json.loads(notes.read_text())["format"] == "bcfleet-plan"


def test_a_saved_plan_or_an_empty_file_is_replaced(here: Path) -> None:
    assert plan_out("plan.json")[0] == 0
    assert plan_out("plan.json")[0] == 0  # a plan over a plan: the usual re-plan
    (here / "empty.json").touch()
    assert plan_out("empty.json")[0] == 0
    assert run_cli("--db", "sqlite:///f.db", "apply", "plan.json").exit_code == 0


def test_a_special_file_is_refused(here: Path) -> None:
    code, err = plan_out(os.devnull)
    assert code == 1
    assert "not a regular file" in err


def test_the_plan_is_written_through_a_temporary_file_renamed_into_place(here: Path) -> None:
    target = here / "plan.json"
    target.write_text(json.dumps({"format": "bcfleet-plan"}))
    target.chmod(0o640)
    inode = target.stat().st_ino
    assert plan_out("plan.json")[0] == 0
    assert target.stat().st_ino != inode  # a new file renamed over the old, not rewritten
    assert target.stat().st_mode & 0o777 == 0o640  # with the old file's permissions
    assert sorted(p.name for p in here.iterdir() if p.name.startswith(".")) == []
