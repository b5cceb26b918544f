"""--db and BCFLEET_DB: a URL that is not a fleet's database is one clear error, and read verbs
never create a database (a typo in cron must not report success forever)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fleet import run_cli


@pytest.mark.parametrize(
    ("db", "code"),
    [
        pytest.param("mysql://x@localhost/db", "INVALID_INPUT", id="mysql"),
        pytest.param("http://example.com/fleet", "INVALID_INPUT", id="http"),
        pytest.param("sqlite://fleet.db", "INVALID_INPUT", id="sqlite-two-slashes"),
        pytest.param("sqlite:fleet.db", "INVALID_INPUT", id="sqlite-no-slashes"),
        pytest.param("/etc/passwd", "INVALID_INPUT", id="not-sqlite"),
        pytest.param("{tmp}", "INVALID_INPUT", id="a-directory"),
        pytest.param(
            "postgresql://postgres@127.0.0.1:5432/bcfleet_no_such_db",
            "DATABASE_UNAVAILABLE",
            id="postgres-no-such-database",
        ),
        pytest.param(
            "postgresql://postgres@127.0.0.1:1/test", "DATABASE_UNAVAILABLE", id="refused-port"
        ),
    ],
)
@pytest.mark.parametrize("verb", [("hosts", "list"), ("tenants", "create", "acme")])
def test_a_url_that_is_no_fleets_database_is_one_clear_error(
    db: str, code: str, verb: tuple[str, ...], tmp_path: Path
) -> None:
    result = run_cli("--json", *verb, "--db", db.format(tmp=tmp_path))
    assert result.exit_code == 1, result.stdout
    error = json.loads(result.stdout)["error"]
    assert error["code"] == code
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_a_file_with_other_tables_is_not_a_fleet(tmp_path: Path) -> None:
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE songs (title TEXT)")
    before = other.read_bytes()
    result = run_cli("--json", "tenants", "create", "acme", db=str(other))
    assert result.exit_code == 1
    assert "not bcfleet's" in json.loads(result.stdout)["error"]["message"]
    assert other.read_bytes() == before


@pytest.mark.parametrize(
    "verb",
    [("hosts", "list"), ("jobs", "tick"), ("doctor",), ("instances", "list")],
    ids=lambda v: "-".join(v),
)
def test_read_verbs_never_create_a_database(verb: tuple[str, ...], tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    result = run_cli("--json", *verb, env={"BCFLEET_DB": str(typo)})
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "NOT_FOUND" and error["details"]["reason"] == "no_fleet"
    assert not typo.exists()


def test_a_verb_that_makes_things_creates_the_fleet_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    made = run_cli("tenants", "create", "acme", db=str(db))
    assert made.exit_code == 0 and "Creating a new fleet in" in made.stderr
    again = run_cli("tenants", "list", db=str(db))
    assert again.exit_code == 0 and "Creating" not in again.stderr


def test_plan_on_no_fleet_plans_against_an_empty_one_and_creates_nothing(tmp_path: Path) -> None:
    config = Path(__file__).parents[2] / "fleet.example.yaml"
    db = tmp_path / "none.db"
    result = run_cli("plan", "-f", str(config), db=str(db))
    assert result.exit_code == 0, result.stderr
    assert "planning against an empty one" in result.stderr and "to add" in result.stdout
    assert not db.exists()


@pytest.mark.parametrize("name", ["a?b.db", "a%41.db", "a#b.db", "a b.db"])
def test_a_bare_path_names_that_very_file(name: str, tmp_path: Path) -> None:
    """?, #, % in a file's name are the name, not a URL's query, fragment or escape."""
    db = tmp_path / name
    made = run_cli("--json", "tenants", "create", "acme", db=str(db))
    assert made.exit_code == 0, made.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(name + "-")) == [name]
    listed = run_cli("--json", "tenants", "list", db=str(db))
    assert "acme" in listed.stdout


def test_an_sqlite_url_with_a_query_string_is_refused_and_opens_nothing(tmp_path: Path) -> None:
    result = run_cli("--json", "tenants", "create", "acme", "--db", f"sqlite:///{tmp_path}/a.db?b")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INVALID_INPUT" and "%3F" in error["message"]
    assert f"{tmp_path}/a.db?b" in error["message"]  # shown as given
    assert list(tmp_path.iterdir()) == []
