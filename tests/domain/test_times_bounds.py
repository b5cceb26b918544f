"""Times from outside lie in one documented range: far dates are INVALID_INPUT, never an overflow."""

from __future__ import annotations

import json

import pytest

from bcfleet.clock import EARLIEST, LATEST, parse_time
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.fleet import run_cli


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("9999-12-31T23:00:00Z", id="year-9999"),
        pytest.param("0001-01-01T00:00:00+01:00", id="year-1-east-of-utc"),
        pytest.param("2200-01-01T00:00:00Z", id="the-upper-bound-itself"),
        pytest.param("1999-12-31T23:59:59Z", id="before-2000"),
    ],
)
def test_far_times_are_invalid_input_naming_the_range(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_time(text)
    assert caught.value.details["earliest"] == "2000-01-01T00:00:00Z"
    assert caught.value.details["latest"] == "2200-01-01T00:00:00Z"


def test_the_range_holds_its_ends() -> None:
    assert parse_time("2000-01-01T00:00:00Z") == EARLIEST
    assert parse_time("2199-12-31T23:59:59Z") < LATEST


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(
            ("reservations", "create", "--tenant", "root", "--pool", "p", "--gpus", "1",
             "--duration", "12h", "--start", "9999-12-31T23:00:00Z"),
            id="reservations-create",
        ),
        pytest.param(
            ("capacity", "preview", "--tenant", "root", "--pool", "p", "--gpus", "1",
             "--duration", "12h", "--start", "9999-12-31T23:00:00Z"),
            id="capacity-preview",
        ),
    ],
)  # fmt: skip
def test_far_start_times_on_the_cli_are_invalid_input(
    args: tuple[str, ...], sqlite_url: str
) -> None:
    made = run_cli(
        "pools", "create", "--tenant", "root", "--name", "p", "--kind", "vps-host",
        "--gpu-model", "L40S", db=sqlite_url,
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    result = run_cli("--json", *args, db=sqlite_url)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"
    assert "Traceback" not in result.stderr


def test_a_far_bcfleet_now_is_invalid_input(sqlite_url: str) -> None:
    Fleet.open(sqlite_url).close()
    result = run_cli(
        "--json", "jobs", "tick", db=sqlite_url, env={"BCFLEET_NOW": "9999-12-31T23:59:00Z"}
    )
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INVALID_INPUT" and error["message"].startswith("BCFLEET_NOW")
