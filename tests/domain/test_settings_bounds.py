"""Settings from BCFLEET_* variables and fleet.toml are bounded like every other input."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.errors import InvalidInputError
from bcfleet.settings import load_fleet_settings


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("BCFLEET_SPOT_NOTICE_MS", "-5", id="negative-notice"),
        pytest.param("BCFLEET_SPOT_NOTICE_MS", "1e400", id="huge-notice"),
        pytest.param("BCFLEET_SPARE_BOOT_SECONDS", "nan", id="nan-boot"),
        pytest.param("BCFLEET_LOCK_TTL_SECONDS", "inf", id="inf-ttl"),
        pytest.param("BCFLEET_LOCK_TTL_SECONDS", "0", id="zero-ttl"),
        pytest.param("BCFLEET_PREEMPTION_CANDIDATE_LIMIT", "9" * 23, id="huge-limit"),
        pytest.param("BCFLEET_PLACEMENT_STRATEGY", "zzz", id="unknown-strategy"),
        pytest.param("BCFLEET_BALLOON_FLOOR_PERCENT", "500", id="over-100-percent"),
        pytest.param("BCFLEET_BALLOON_FLOOR_PERCENT", "0", id="a-balloon-floor-of-0-percent"),
    ],
)
def test_an_out_of_bounds_variable_is_invalid_input(variable: str, value: str) -> None:
    with pytest.raises(InvalidInputError, match="setting"):
        load_fleet_settings(path=Path("/nonexistent/fleet.toml"), environ={variable: value})


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('[fleet]\nhost_reserve = {vcpu = "x"}\n', id="reserve-not-a-number"),
        pytest.param("[fleet]\nhost_reserve = {vcpu = -1}\n", id="negative-reserve"),
        pytest.param('[fleet]\njobs = {"vps.hosts" = 1e400}\n', id="infinite-interval"),
        pytest.param('[fleet]\njobs = {"vps.hosts" = 0}\n', id="zero-interval"),
        pytest.param("[fleet\n", id="not-toml"),
        pytest.param("[instances]\nballoon_floor_percent = 0\n", id="floor-of-0-percent"),
        pytest.param("[instances]\nballoon_floor_percent = 101\n", id="floor-over-100-percent"),
        pytest.param('[instances]\nballoon_floor_percent = "half"\n', id="floor-not-a-number"),
        pytest.param("instances = 5\n", id="instances-not-a-table"),
        pytest.param(b"\xff\xfe[fleet]", id="not-utf8"),
    ],
)
def test_an_out_of_bounds_fleet_toml_is_invalid_input(text: str | bytes, tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(InvalidInputError):
        load_fleet_settings(path=path, environ={})


def test_the_bounds_name_the_setting_and_its_range() -> None:
    with pytest.raises(InvalidInputError) as caught:
        load_fleet_settings(path=Path("/nonexistent"), environ={"BCFLEET_SPOT_NOTICE_MS": "-5"})
    assert caught.value.message == (
        "setting spot_notice_ms must be between 0 and 86,400,000, got -5"
    )
    assert caught.value.details == {
        "setting": "spot_notice_ms",
        "minimum": 0,
        "maximum": 86_400_000,
    }


def test_defaults_are_within_the_bounds() -> None:
    load_fleet_settings(path=Path("/nonexistent"), environ={})


@pytest.mark.parametrize(
    ("text", "environ", "floor"),
    [
        pytest.param("", {}, 50, id="default-50"),
        pytest.param("[instances]\nballoon_floor_percent = 1\n", {}, 1, id="least-1"),
        pytest.param("[instances]\nballoon_floor_percent = 100\n", {}, 100, id="most-100"),
        pytest.param(
            "[fleet]\nballoon_floor_percent = 60\n[instances]\nballoon_floor_percent = 70\n",
            {},
            70,
            id="instances-table-wins-over-the-flat-key",
        ),
        pytest.param("balloon_floor_percent = 60\n", {}, 60, id="flat-key-still-read"),
        pytest.param(
            "[instances]\nballoon_floor_percent = 70\n",
            {"BCFLEET_BALLOON_FLOOR_PERCENT": "40"},
            40,
            id="environment-wins",
        ),
    ],
)
def test_the_balloon_floor_percent_of_document_000s_instances_table(
    text: str, environ: dict[str, str], floor: int, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    assert load_fleet_settings(path=path, environ=environ).balloon_floor_percent == floor
