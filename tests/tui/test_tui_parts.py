"""The dashboard's pure parts: cells that say their state in words, durations, the filter, describe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rich.text import Text

from bcfleet.tui.format import age, countdown, duration_text, short_id, usage_cell
from bcfleet.tui.host_rows import host_row, next_age_change, state_cell
from bcfleet.tui.screens.detail import describe
from bcfleet.tui.screens.instances import reason_of
from bcfleet.tui.screens.reservations import when_cell
from bcfleet.tui.widgets.keyed_table import Column, Row, matches, parse_filter
from bcfleet.tui.widgets.table_rows import sort_key

NOW = datetime(2026, 11, 30, 10, 0, 40, tzinfo=UTC)


def plain(cell: Text | str) -> str:
    return cell.plain if isinstance(cell, Text) else cell


@pytest.mark.parametrize(
    ("allocated", "capacity", "ratio", "shown", "fraction"),
    [
        pytest.param(30, 128, 2.0, "30/128 ×2", 30 / 128, id="overcommitted-pool-shows-its-ratio"),
        pytest.param(0, 366, 1.5, "0/366 ×1.5", 0.0, id="fractional-ratio"),
        pytest.param(64, 64, 1.0, "64/64 ×1", 1.0, id="full-is-not-over"),
        pytest.param(70, 64, 1.0, "70/64 ×1 over", 70 / 64, id="over-capacity-says-over-in-words"),
    ],
)
def test_usage_cells(
    allocated: int, capacity: int, ratio: float, shown: str, fraction: float
) -> None:
    cell, sort = usage_cell({"allocated": allocated, "capacity": capacity, "ratio": ratio})
    assert plain(cell) == shown
    assert sort == pytest.approx(fraction)


def test_narrow_cells_leave_out_a_ratio_of_one_only() -> None:
    row = {"allocated": 1, "capacity": 10, "ratio": 1.0}
    assert plain(usage_cell(row, narrow=True)[0]) == "1/10"
    assert plain(usage_cell({**row, "ratio": 2.0}, narrow=True)[0]) == "1/10 ×2"


@pytest.mark.parametrize(
    ("seconds", "long", "short"),
    [(42, "42s", "42s"), (310, "5m 10s", "5m"), (12_000, "3h 20m", "3h"), (190_000, "2d 4h", "2d")],
)
def test_durations(seconds: int, long: str, short: str) -> None:
    assert duration_text(seconds) == long
    assert duration_text(seconds, short=True) == short


def test_ages_and_countdowns_from_the_fleets_clock() -> None:
    assert age("2026-11-30T10:00:00Z", NOW) == ("40s", 40.0)
    assert age(None, NOW)[0] == "-"
    left, seconds = countdown("2026-11-30T10:02:00Z", NOW)
    assert (left.plain, seconds) == ("in 1m 20s", 80.0)
    assert countdown("2026-11-30T10:00:00Z", NOW)[0].plain == "passed"


@pytest.mark.parametrize(
    ("later", "text", "changes"),
    [
        pytest.param(40, "40s", 41, id="seconds"),
        pytest.param(310, "5m", 360, id="minutes"),
        pytest.param(12_000, "3h", 14_400, id="hours"),
        pytest.param(190_000, "2d", 259_200, id="days"),
        pytest.param(-5, "0s", 1, id="a-clock-behind"),
    ],
)
def test_the_age_text_changes_when_next_age_change_says(
    later: int, text: str, changes: int
) -> None:
    reported = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    now = reported + timedelta(seconds=later)
    when = "2026-11-30T10:00:00Z"
    assert age(when, now, short=True)[0] == text
    due = next_age_change(when, now)
    assert due == (reported + timedelta(seconds=changes)).timestamp()
    just_before = datetime.fromtimestamp(due - 0.001, UTC)
    assert age(when, just_before, short=True)[0] == text
    assert age(when, datetime.fromtimestamp(due, UTC), short=True)[0] != text
    assert next_age_change(None, now) is None


def test_host_states_are_words() -> None:
    host = {"state": "ready", "inventoryReportedAt": "2026-11-30T10:00:00Z"}
    assert plain(state_cell(host)) == "ready"
    assert plain(state_cell({**host, "state": "draining"})) == "draining"
    assert plain(state_cell({"state": "draining", "inventoryReportedAt": None})) == (
        "draining, no inventory"
    )
    short = {**host, "conditions": [{"type": "InventoryShortfall", "message": "GPUs gone"}]}
    assert plain(state_cell(short)) == "inventory short"
    assert plain(state_cell(short, narrow=True)) == "short"
    degraded = {**host, "health": {"state": "degraded", "message": "libvirt unreachable"}}
    assert plain(state_cell(degraded)) == "degraded"
    assert plain(state_cell({**host, "health": {"state": "ok", "message": None}})) == "ready"


def test_an_instances_reason_is_the_servers_condition_else_its_agents() -> None:
    refused = {"type": "StartRefused", "reason": "NotEnoughHugepages", "message": "huge pages"}
    assert reason_of({"conditions": [], "agentConditions": [refused]}) == "StartRefused: huge pages"
    degraded = {"type": "PlacementDegraded", "status": "True", "message": "spread"}
    assert reason_of({"conditions": [degraded], "agentConditions": [refused]}) == "spread"
    assert reason_of({"conditions": []}) == "-"


def test_a_host_without_inventory_or_rows_shows_dashes_not_zeros() -> None:
    host = {"id": "node_1", "name": "h1", "pool": "p", "state": "ready",
            "inventoryReportedAt": None, "resources": []}  # fmt: skip
    row = host_row(host, NOW)
    assert [plain(c) for c in row.cells] == [
        "h1", "p", "no inventory", "-", "-", "-", "-", "-", "-"
    ]  # fmt: skip


COLUMNS = (Column("name", "NAME"), Column("pool", "POOL"), Column("state", "STATE"))


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        pytest.param("fra", {"fra-01", "fra-07"}, id="a-word-anywhere"),
        pytest.param("pool:ams", {"ams-05"}, id="column-by-key"),
        pytest.param("state:drain fra", {"fra-07"}, id="words-and-columns-together"),
        pytest.param("STATE:ready pool:vps-fra", {"fra-01"}, id="case-does-not-matter"),
        pytest.param("nope:fra", set(), id="unknown-column-is-a-plain-word"),
        pytest.param("01vps", set(), id="a-word-never-spans-two-cells"),
        pytest.param("~^vps-fra$", {"fra-01", "fra-07"}, id="a-regex-anchors-to-each-cell"),
        pytest.param("!ready", {"fra-07"}, id="an-inverted-word"),
    ],
)
def test_the_filter(text: str, hits: set[str]) -> None:
    rows = [
        Row("1", ("fra-01", "vps-fra", "ready")),
        Row("2", ("fra-07", "vps-fra", "draining")),
        Row("3", ("ams-05", "vps-ams", Text("ready"))),
    ]
    terms = parse_filter(text, COLUMNS)
    assert {str(r.cells[0]) for r in rows if matches(r, terms)} == hits


def test_a_row_given_its_search_texts_is_searched_by_those() -> None:
    row = Row("1", ("fra-01", "vps-fra"), search=("fra-01", "gpu-node"))
    assert matches(row, parse_filter("gpu", COLUMNS))
    assert not matches(row, parse_filter("vps", COLUMNS))
    assert matches(row, parse_filter("pool:gpu", COLUMNS))


def test_describe_spells_out_nested_documents() -> None:
    doc = {"id": "rsv_1", "during": {"start": "a", "end": "b"}, "nodeIds": [],
           "conditions": [{"type": "Unschedulable", "reason": "NoNodeFits"}]}  # fmt: skip
    assert describe(doc) == [
        ("id", "rsv_1"),
        ("during", ""),
        ("  start", "a"),
        ("  end", "b"),
        ("nodeIds", "-"),
        ("conditions", ""),
        ("  [0]", ""),
        ("    type", "Unschedulable"),
        ("    reason", "NoNodeFits"),
    ]


def test_short_ids_keep_prefix_and_tail() -> None:
    assert short_id("rsv_01m8nyb980atensys3d3p0th6p") == "rsv_…p0th6p"
    assert short_id("evt_12") == "evt_12"


def test_text_sorts_naturally_numbers_first_none_last() -> None:
    values = ["ams-100", None, "ams-10", 3, "AMS-9", "ams-99", "ams-1000", "ams-x"]
    assert sorted(values, key=sort_key) == [
        3, "AMS-9", "ams-10", "ams-99", "ams-100", "ams-1000", "ams-x", None,
    ]  # fmt: skip


def test_a_placed_reservation_past_its_start_says_starting_now_not_starts_passed() -> None:
    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    placed = {"state": "placed", "during": {"start": "2026-11-30T09:59:30Z",
                                            "end": "2026-11-30T11:00:00Z"}}  # fmt: skip
    text, seconds = when_cell(placed, None, now)
    assert (text.plain, seconds) == ("starting now", -30.0)
    later = {**placed, "during": {"start": "2026-11-30T10:05:00Z", "end": "2026-11-30T11:00:00Z"}}
    assert when_cell(later, None, now)[0].plain == "starts in 5m"
