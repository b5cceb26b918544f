"""One input boundary: names cannot forge output, numbers cannot break storage or reads.

Regression tests for what was observed: newlines and bidi overrides in names forging
table rows, a NUL in a FleetConfig, NaN and infinite ratios, numbers past what the
database stores (a traceback on SQLite, NumericValueOutOfRange on PostgreSQL), an
inventory listing one GPU PCI address twice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.cli.common import table
from bcfleet.domain.bounds import (
    INT32_MAX,
    QUOTA_MAX,
    RATIO_MAX,
    RATIO_MIN,
    SHAPE_MAX,
    SLUG,
    number_problem,
    printable,
    ratio_problem,
    text_problem,
    whole_problem,
)
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.reconcile.schema import fleetconfig_schema
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.fleet import CliResult, run_cli
from tests.support.http import error_code, served

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def strict_json(raw: str) -> Any:
    """json.loads that refuses NaN and Infinity, as every other JSON reader does."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(raw, parse_constant=refuse)


def refused(result: CliResult, *words: str) -> dict[str, Any]:
    """The CLI said INVALID_INPUT (exit 1, JSON error) naming every word, with no traceback."""
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    body = strict_json(result.stdout)["error"]
    assert body["code"] == "INVALID_INPUT", body
    for word in words:
        assert word in body["message"], body["message"]
    return dict(body)


# ---------------------------------------------------------------------------
# The bounds, as a table


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("web-01", None, id="plain-name"),
        pytest.param("Grüße aus Köln", None, id="letters-and-spaces"),
        pytest.param("a\nb", "\\n at position 2", id="newline"),
        pytest.param("a\rb", "\\r", id="carriage-return"),
        pytest.param("a\tb", "\\t", id="tab"),
        pytest.param("ab\x00", "\\u0000 at position 3", id="nul"),
        pytest.param("\u202eevil", "\\u202e at position 1", id="right-to-left-override"),
        pytest.param("a\u2066b", "\\u2066", id="left-to-right-isolate"),
        pytest.param("a\u200bb", "\\u200b", id="zero-width-space"),
        pytest.param("a\u2028b", "\\u2028", id="line-separator"),
        pytest.param("a\x85b", "\\u0085", id="c1-next-line"),
        pytest.param("", "1 to 253 characters, got 0", id="empty"),
        pytest.param("x" * 254, "1 to 253 characters, got 254", id="too-long"),
        pytest.param(7, "must be text", id="not-text"),
    ],
)
def test_a_name_is_printable_text_of_bounded_length(value: Any, problem: str | None) -> None:
    found = text_problem("name", value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    ("value", "low", "high", "ok"),
    [
        pytest.param(1, 1, SHAPE_MAX, True, id="smallest"),
        pytest.param(SHAPE_MAX, 1, SHAPE_MAX, True, id="largest"),
        pytest.param(SHAPE_MAX + 1, 1, SHAPE_MAX, False, id="one-past"),
        pytest.param(0, 1, SHAPE_MAX, False, id="below"),
        pytest.param(10**23, 1, SHAPE_MAX, False, id="huge"),
        pytest.param(2.0, 1, SHAPE_MAX, True, id="whole-float"),
        pytest.param(2.5, 1, SHAPE_MAX, False, id="fraction"),
        pytest.param(float(SHAPE_MAX + 1), 1, SHAPE_MAX, False, id="whole-float-one-past"),
        pytest.param(float("nan"), 1, SHAPE_MAX, False, id="nan"),
        pytest.param(float("inf"), 1, SHAPE_MAX, False, id="infinity"),
        pytest.param(True, 0, SHAPE_MAX, False, id="bool"),
        pytest.param("3", 0, SHAPE_MAX, False, id="text"),
    ],
)
def test_a_whole_number_is_within_its_bounds(value: Any, low: int, high: int, ok: bool) -> None:
    problem = whole_problem("vcpu", value, low, high)
    assert (problem is None) == ok
    if not ok:
        assert problem is not None and "vcpu" in problem and f"{high:,}" in problem


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param(RATIO_MIN, True, id="0.1"),
        pytest.param(RATIO_MAX, True, id="100"),
        pytest.param(2, True, id="whole"),
        pytest.param(0.05, True, id="below-is-clamped-not-refused"),
        pytest.param(100.5, True, id="above-is-clamped-not-refused"),
        pytest.param(math.nan, False, id="nan"),
        pytest.param(math.inf, False, id="inf"),
        pytest.param(-math.inf, False, id="minus-inf"),
        pytest.param(True, False, id="bool"),
        pytest.param("2", False, id="text"),
    ],
)
def test_an_overcommit_ratio_is_a_finite_number(value: Any, ok: bool) -> None:
    problem = ratio_problem("overcommit.vcpu", value)
    assert (problem is None) == ok
    if not ok:
        assert problem is not None and "overcommit.vcpu" in problem and "number" in problem


def test_bounds_fit_the_database_and_the_shipped_schemas_agree() -> None:
    assert SHAPE_MAX * RATIO_MAX < INT32_MAX  # a capacity row is allocatable × ratio
    assert QUOTA_MAX < INT32_MAX
    defs = fleetconfig_schema()["$defs"]
    assert "minimum" not in defs["ratio"] and "maximum" not in defs["ratio"]  # clamped, not refused
    assert f"{RATIO_MIN:g}..{RATIO_MAX:g}" in defs["ratio"]["description"]
    assert any(d.get("pattern") == SLUG.pattern for d in defs.values())
    assert number_problem("memoryGiB", 1e308, 0, SHAPE_MAX) is not None


def test_printable_escapes_what_could_forge_a_row() -> None:
    assert printable("plain") == "plain"
    assert printable("a\nb\u202ec\x00") == "a\\nb\\u202ec\\u0000"
    rendered = table(
        [{"name": "evil\nforged  running", "state": "\u202erunning"}, {"name": "ok", "state": "x"}],
        [("NAME", "name"), ("STATE", "state")],
    )
    assert len(rendered.splitlines()) == 3
    assert "evil\\nforged" in rendered and "\\u202erunning" in rendered


# ---------------------------------------------------------------------------
# The CLI


@pytest.fixture
def setup(cli: Any, tmp_path: Path) -> Any:
    """root's pool vps-fra offered to acme, with a host that reported an inventory."""
    assert cli("tenants", "create", "acme").exit_code == 0
    assert cli("pools", "create", "--name", "vps-fra", "--kind", "vps-host").exit_code == 0
    assert cli("pools", "offer", "--pool", "vps-fra", "--to", "acme").exit_code == 0
    assert cli("hosts", "adopt", "--pool", "vps-fra", "--name", "fra-01").exit_code == 0
    return cli


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("web\nfra-02  running", id="newline"),
        pytest.param("\u202egnineur", id="right-to-left-override"),
        pytest.param("a\x00b", id="nul"),
    ],
)
def test_an_instance_name_that_could_forge_a_row_is_refused(setup: Any, name: str) -> None:
    assert setup("flavors", "create", "--tenant", "root", "--pool", "vps-fra", "--name", "g1.small", "--vcpu", "2",
                 "--memory-gib", "4", "--disk-gib", "40").exit_code == 0  # fmt: skip
    result = setup("--json", "instances", "create", "--tenant", "acme", "--pool", "vps-fra",
                   "--flavor", "g1.small", "--name", name)  # fmt: skip
    if "\x00" in name:  # no argv holds a NUL: the CLI refuses it before the API sees it
        body = refused(result, "--name", "NUL")
        assert body["details"]["option"] == "--name"
        return
    body = refused(result, "name", "control or formatting")
    assert body["details"]["field"] == "name"


@pytest.mark.parametrize(
    "vcpu", ["99999999999999999999999", str(INT32_MAX + 1), str(SHAPE_MAX + 1)]
)
def test_a_flavor_past_the_bounds_is_invalid_input_not_a_traceback(setup: Any, vcpu: str) -> None:
    result = setup("--json", "flavors", "create", "--tenant", "root", "--pool", "vps-fra", "--name", "big",
                   "--vcpu", vcpu, "--memory-gib", "4", "--disk-gib", "40")  # fmt: skip
    body = refused(result, "vcpu", "1,000,000")
    assert "vcpu" in body["details"]["fields"]


@pytest.mark.parametrize("value", ["99999999999999999999999", str(INT32_MAX + 1)])
def test_a_quota_past_the_bounds_is_invalid_input(setup: Any, value: str) -> None:
    result = setup("--json", "quotas", "set", "--tenant", "acme", "--pool", "vps-fra",
                   "--vcpu", value)  # fmt: skip
    body = refused(result, "vcpu", "1,000,000,000")
    assert body["details"] == {"field": "vcpu", "bound": f"0..{QUOTA_MAX}"}


@pytest.mark.parametrize("ratio", ["nan", "inf", "-inf"])
def test_an_overcommit_that_is_not_finite_is_refused(setup: Any, ratio: str) -> None:
    result = setup("--json", "pools", "create", "--name", "p2", "--kind", "vps-host",
                   "--overcommit", f"vcpu={ratio}")  # fmt: skip
    body = refused(result, "overcommit.vcpu", "finite")
    assert body["details"] == {"field": "overcommit.vcpu", "bound": "finite"}
    assert setup("--json", "pools", "show", "p2").exit_code == 1  # nothing was stored


def test_a_partial_overcommit_update_keeps_the_other_ratios(setup: Any) -> None:
    assert setup("pools", "update", "--pool", "vps-fra", "--overcommit",
                 "vcpu=2,memoryGiB=1.5").exit_code == 0  # fmt: skip
    result = setup("--json", "pools", "update", "--pool", "vps-fra", "--overcommit", "vcpu=0.1")
    assert result.exit_code == 0, result.stderr
    assert strict_json(result.stdout)["policy"]["overcommit"] == {"vcpu": 0.1, "memoryGiB": 1.5}
    shown = setup("--json", "pools", "show", "vps-fra")
    assert strict_json(shown.stdout)["policy"]["overcommit"]["memoryGiB"] == 1.5


def _report(setup: Any, tmp_path: Path, raw: str) -> CliResult:
    path = tmp_path / "inventory.json"
    path.write_text(raw)
    return setup("--json", "hosts", "report", "--host", "fra-01", "--file", str(path))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        pytest.param({"diskGiB": 1e308}, "$.diskGiB", id="disk-1e308"),
        pytest.param({"memoryGiB": 1e308}, "$.memoryGiB", id="memory-1e308"),
        pytest.param({"memoryGiB": math.nan}, "$.memoryGiB", id="memory-nan"),
        pytest.param({"diskGiB": math.inf}, "$.diskGiB", id="disk-infinity"),
        pytest.param({"agent": {"version": "1\x00"}}, "$.agent.version", id="nul-in-text"),
        pytest.param({"agent": {"hostname": "h\u202e"}}, "$.agent.hostname", id="bidi-in-text"),
    ],
)
def test_an_inventory_number_out_of_bounds_is_refused(
    setup: Any, tmp_path: Path, change: dict[str, Any], where: str
) -> None:
    doc = {**inventory(cpus=4), **change}
    body = refused(_report(setup, tmp_path, json.dumps(doc)), where)
    assert where in {p["path"] for p in body["details"]["problems"]}


def test_an_inventory_listing_a_gpu_pci_address_twice_is_refused(
    setup: Any, tmp_path: Path
) -> None:
    doc = inventory(cpus=4, gpus=2)
    doc["gpus"][1]["pciAddress"] = doc["gpus"][0]["pciAddress"].upper()
    body = refused(_report(setup, tmp_path, json.dumps(doc)), "duplicate GPU PCI address")
    assert {p["path"] for p in body["details"]["problems"]} == {"$.gpus[1].pciAddress"}


def test_a_nan_ratio_already_stored_shows_as_null_in_strict_json(
    setup: Any, sqlite_url: str
) -> None:
    fleet = Fleet.open(sqlite_url)
    try:
        with fleet.write() as session:
            session.execute(text("UPDATE pools SET overcommit = '{\"vcpu\": NaN}'"))
    finally:
        fleet.close()
    result = setup("--json", "pools", "show", "vps-fra")
    assert result.exit_code == 0, result.stderr
    assert strict_json(result.stdout)["policy"]["overcommit"] == {"vcpu": None}
    listed = setup("--json", "pools", "list")
    assert strict_json(listed.stdout)["items"][0]["policy"]["overcommit"] == {"vcpu": None}


def test_a_name_stored_before_the_bounds_cannot_forge_a_row(setup: Any, sqlite_url: str) -> None:
    assert setup("flavors", "create", "--tenant", "root", "--pool", "vps-fra", "--name", "g1.small", "--vcpu", "2",
                 "--memory-gib", "4", "--disk-gib", "40").exit_code == 0  # fmt: skip
    made = setup("--json", "instances", "create", "--tenant", "acme", "--pool", "vps-fra",
                 "--flavor", "g1.small", "--name", "web")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    fleet = Fleet.open(sqlite_url)
    try:
        with fleet.write() as session:
            session.execute(
                text("UPDATE instances SET name = :n"),
                {"n": "web\nins_forged  root  running\u202e"},
            )
    finally:
        fleet.close()
    result = setup("instances", "list")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2  # the header and the one instance
    assert "web\\nins_forged" in lines[1] and "\\u202e" in lines[1]


# ---------------------------------------------------------------------------
# FleetConfig: `fleet validate -f` reports each problem at file:line:column

FLEETCONFIG = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - {{ id: acme, name: {name} }}
pools:
  - name: vps-fra
    kind: vps-host
    policy:
      overcommit: {{ vcpu: {ratio} }}
flavors:
  - {{ pool: vps-fra, name: g1.small, vcpu: {vcpu}, memoryGiB: 4, diskGiB: 40 }}
"""


@pytest.mark.parametrize(
    ("values", "line", "column", "message"),
    [
        pytest.param({"name": '"AC\\0ME"'}, 4, 23, "NUL characters are not allowed", id="nul"),
        pytest.param({"name": '"AC\\nME"'}, 4, 23, "\\n at position 3", id="newline"),
        pytest.param({"name": '"\\u202eACME"'}, 4, 23, "\\u202e at position 1", id="bidi"),
        pytest.param({"ratio": ".nan"}, 9, 27, "expected a finite number, got nan", id="nan"),
        pytest.param({"ratio": ".inf"}, 9, 27, "expected a finite number, got inf", id="inf"),
        pytest.param({"ratio": "1.0e+400"}, 9, 27, "expected a finite number, got inf", id="1e400"),
        pytest.param({"vcpu": "2000000"}, 11, 44, "from 1 to 1,000,000", id="vcpu-too-big"),
    ],
)
def test_fleet_validate_reports_a_hostile_value_at_its_place(
    cli: Any, tmp_path: Path, values: dict[str, str], line: int, column: int, message: str
) -> None:
    fields = {"name": "ACME", "ratio": "2", "vcpu": "2", **values}
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEETCONFIG.format(**fields))
    result = cli("--json", "validate", "-f", str(path))
    assert result.exit_code == 1, result.stdout
    assert "Traceback" not in result.stderr
    errors = strict_json(result.stdout)["error"]["details"]["errors"]
    assert any(
        (e["line"], e["column"]) == (line, column) and message in e["message"] for e in errors
    ), errors
    assert cli("--json", "apply", "-f", str(path), "--yes").exit_code == 1


def test_the_same_fleetconfig_without_hostile_values_is_valid(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEETCONFIG.format(name="ACME", ratio="2", vcpu="2"))
    assert cli("validate", "-f", str(path)).exit_code == 0


# ---------------------------------------------------------------------------
# HTTP


def test_http_refuses_hostile_names_and_numbers_with_400(fleet: Fleet) -> None:
    hosted_pool(fleet)
    flavor(fleet, "vps-fra")
    with served(fleet) as (_, api):
        nan_pool = api.post(
            "/v1/pools",
            content=b'{"name": "p2", "kind": "vps-host", "policy": {"overcommit": {"vcpu": NaN}}}',
            headers={"Content-Type": "application/json"},
        )
        assert nan_pool.status_code == 400 and error_code(nan_pool) == "INVALID_INPUT"
        forged = api.post(
            "/v1/instances?tenant=acme",
            json={"pool": "vps-fra", "flavor": "g1.small", "name": "a\u202eb"},
        )
        assert forged.status_code == 400 and error_code(forged) == "INVALID_INPUT"
        quota = api.put("/v1/quotas/acme/vps-fra", json={"vcpu": INT32_MAX + 1})
        assert quota.status_code == 400 and error_code(quota) == "INVALID_INPUT"
        pools = api.get("/v1/pools")
        assert pools.status_code == 200
        assert "p2" not in {p["name"] for p in strict_json(pools.text)["items"]}


def test_the_openapi_document_states_the_bounds(fleet: Fleet) -> None:
    with served(fleet) as (_, api):
        schemas = api.get("/v1/openapi.json").json()["components"]["schemas"]
    assert schemas["FlavorCreate"]["properties"]["vcpu"]["maximum"] == SHAPE_MAX
    assert schemas["QuotaSet"]["properties"]["vcpu"]["anyOf"][0]["maximum"] == QUOTA_MAX
    ratio = schemas["PoolCreate"]["properties"]["policy"]["properties"]["overcommit"]
    assert "maximum" not in ratio["properties"]["vcpu"]  # clamped to RATIO_MAX with a notice
    assert f"{RATIO_MAX:g}" in ratio["properties"]["vcpu"]["description"]
    assert "pattern" in schemas["InstanceCreate"]["properties"]["name"]


# ---------------------------------------------------------------------------
# Both engines


def test_numbers_past_integer_are_invalid_input_on_both_engines(
    any_fleet: Fleet, db_url: str
) -> None:
    pool = hosted_pool(any_fleet)
    with pytest.raises(InvalidInputError) as caught:
        flavor(any_fleet, pool["id"], name="big", vcpu=INT32_MAX + 1)
    assert "vcpu" in caught.value.details["fields"]
    with pytest.raises(InvalidInputError):
        any_fleet.api.quotas.set(
            OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": INT32_MAX + 1}
        )
    result = run_cli("--json", "flavors", "create", "--tenant", "root", "--pool", "vps-fra", "--name", "big",
                     "--vcpu", str(INT32_MAX + 1), "--memory-gib", "4", "--disk-gib", "40",
                     db=db_url)  # fmt: skip
    refused(result, "vcpu")
    assert any_fleet.api.flavors.list(OP, tenant_id="root", pool_id=pool["id"])["items"] == []


def test_doctor_finds_a_physical_gpu_held_by_two_guests(any_fleet: Fleet) -> None:
    pool = hosted_pool(any_fleet)
    host(any_fleet, pool["id"], "fra-01", inventory(cpus=16, gpus=2), labels=PLACEMENT)
    run_vps_hosts(any_fleet, any_fleet.now())
    flavor(any_fleet, pool["id"], name="gpu1", gpus=1)
    for name in ("a", "b"):
        made = any_fleet.api.instances.create(
            OP, tenant_id="acme", pool_id=pool["id"], flavor="gpu1", name=name
        )
        assert made["state"] != "pending"
    assert any_fleet.api.doctor.check(OP, invariants=True)["invariants"]["ok"]
    with any_fleet.write() as session:  # what an inventory listing one address twice left
        session.execute(text("UPDATE gpu_atoms SET pci_address = '0000:17:00.0'"))
    checked = any_fleet.api.doctor.check(OP, invariants=True)["invariants"]
    assert not checked["ok"]
    (problem,) = checked["problems"]["doubleHeldGpus"]
    assert "0000:17:00.0" in problem


def test_a_nan_ratio_already_stored_does_not_break_the_human_rendering(
    setup: Any, sqlite_url: str
) -> None:
    fleet = Fleet.open(sqlite_url)
    try:
        with fleet.write() as session:
            session.execute(text("UPDATE pools SET overcommit = '{\"vcpu\": NaN}'"))
    finally:
        fleet.close()
    result = setup("pools", "show", "vps-fra")
    assert result.exit_code == 0, result.stderr
    assert "vcpu=1 (invalid value stored)" in result.stdout
