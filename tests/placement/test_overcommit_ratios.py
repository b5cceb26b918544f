"""Overcommit ratios (document 000): default 1, clamped to 0.1..100, and every edge says so.

The API, HTTP, the CLI and a FleetConfig plan and apply store the same clamped value and
word the same notice; NaN and infinities are INVALID_INPUT everywhere; a partial update
keeps the ratios it leaves out; the console shows what the API shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from bcfleet.domain.bounds import ratio_notice
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.store.models import Pool
from bcfleet.tui.format import ratio_text
from bcfleet.tui.screens.catalog import pool_row
from tests.support.builders import OP
from tests.support.fleet import T0, CliResult
from tests.support.http import error_code, served

Cli = Callable[..., CliResult]

# given, what is stored, whether a notice says it was clamped
CLAMPED = [
    pytest.param(0.05, 0.1, True, id="0.05-is-kept-as-0.1"),
    pytest.param(0.1, 0.1, False, id="0.1-as-given"),
    pytest.param(1, 1.0, False, id="1-as-given"),
    pytest.param(100, 100.0, False, id="100-as-given"),
    pytest.param(150, 100.0, True, id="150-is-kept-as-100"),
]
REFUSED = [
    pytest.param("nan", id="nan"),
    pytest.param("inf", id="inf"),
    pytest.param("-inf", id="minus-inf"),
]
NOTICE_0_05 = "overcommit.vcpu must be from 0.1 to 100: you entered 0.05, so we keep 0.1"


def _expected_notices(given: float, clamped: bool) -> list[dict[str, str]]:
    if not clamped:
        return []
    message = ratio_notice("overcommit.vcpu", given)
    assert message is not None
    return [{"code": "RATIO_CLAMPED", "field": "overcommit.vcpu", "message": message}]


def test_the_notice_names_the_field_the_value_and_what_is_kept() -> None:
    assert ratio_notice("overcommit.vcpu", 0.05) == NOTICE_0_05
    assert ratio_notice("overcommit.vcpu", 2.5) is None


@pytest.mark.parametrize(("given", "stored", "clamped"), CLAMPED)
def test_the_api_stores_the_clamped_ratio_and_says_so(
    fleet: Fleet, given: float, stored: float, clamped: bool
) -> None:
    pools = fleet.api.pools
    body = pools.create(OP, tenant_id="root", name="p", kind="vps-host", overcommit={"vcpu": given})
    assert body["policy"]["overcommit"] == {"vcpu": stored}
    assert body.get("notices", []) == _expected_notices(given, clamped)
    updated = pools.update(OP, tenant_id="root", pool="p", overcommit={"vcpu": given})
    assert updated.get("notices", []) == _expected_notices(given, clamped)
    assert pools.show(OP, tenant_id="root", pool="p")["policy"]["overcommit"] == {"vcpu": stored}
    assert "notices" not in pools.show(OP, tenant_id="root", pool="p")


@pytest.mark.parametrize("given", REFUSED)
def test_the_api_refuses_a_ratio_that_is_not_finite(fleet: Fleet, given: str) -> None:
    with pytest.raises(InvalidInputError, match="must be a finite number"):
        fleet.api.pools.create(
            OP, tenant_id="root", name="p", kind="vps-host", overcommit={"vcpu": float(given)}
        )
    fleet.api.pools.create(OP, tenant_id="root", name="p", kind="vps-host")
    with pytest.raises(InvalidInputError, match="overcommit.vcpu"):
        fleet.api.pools.update(OP, tenant_id="root", pool="p", overcommit={"vcpu": float(given)})
    assert fleet.api.pools.show(OP, tenant_id="root", pool="p")["policy"]["overcommit"] == {}


@pytest.mark.parametrize(("given", "stored", "clamped"), CLAMPED)
def test_http_stores_the_clamped_ratio_and_carries_the_notice(
    fleet: Fleet, given: float, stored: float, clamped: bool
) -> None:
    with served(fleet) as (_, api):
        policy = {"overcommit": {"vcpu": given}}
        created = api.post("/v1/pools", json={"name": "p", "kind": "vps-host", "policy": policy})
        assert created.status_code == 201, created.text
        assert created.json()["policy"]["overcommit"] == {"vcpu": stored}
        assert created.json().get("notices", []) == _expected_notices(given, clamped)
        patched = api.patch("/v1/pools/p", json={"policy": policy})
        assert patched.status_code == 200, patched.text
        assert patched.json().get("notices", []) == _expected_notices(given, clamped)
        assert api.get("/v1/pools/p").json()["policy"]["overcommit"] == {"vcpu": stored}


@pytest.mark.parametrize("given", ["NaN", "Infinity", "-Infinity"])
def test_http_refuses_a_ratio_that_is_not_finite(fleet: Fleet, given: str) -> None:
    raw = '{"name": "p", "kind": "vps-host", "policy": {"overcommit": {"vcpu": GIVEN}}}'
    raw = raw.replace("GIVEN", given)
    with served(fleet) as (_, api):
        answer = api.post("/v1/pools", content=raw, headers={"content-type": "application/json"})
        assert answer.status_code == 400 and error_code(answer) == "INVALID_INPUT"
        assert api.get("/v1/pools/p").status_code == 404


def test_a_partial_http_patch_keeps_the_other_ratios(fleet: Fleet) -> None:
    with served(fleet) as (_, api):
        policy = {"overcommit": {"vcpu": 0.05, "memoryGiB": 1.5}}
        api.post("/v1/pools", json={"name": "p", "kind": "vps-host", "policy": policy})
        patched = api.patch("/v1/pools/p", json={"policy": {"overcommit": {"memoryGiB": 2}}})
        assert patched.json()["policy"]["overcommit"] == {"vcpu": 0.1, "memoryGiB": 2}
        assert "notices" not in patched.json()


@pytest.mark.parametrize(("given", "stored", "clamped"), CLAMPED)
def test_the_cli_stores_the_clamped_ratio_and_prints_the_notice(
    cli: Cli, given: float, stored: float, clamped: bool
) -> None:
    created = cli("pools", "create", "--name", "p", "--kind", "vps-host",
                  "--overcommit", f"vcpu={given}")  # fmt: skip
    assert created.exit_code == 0, created.stderr
    assert f"overcommit:  vcpu={stored:g}" in created.stdout
    notices = [line for line in created.stdout.splitlines() if line.startswith("notice: ")]
    assert notices == [f"notice: {n['message']}" for n in _expected_notices(given, clamped)]
    shown = cli("--json", "pools", "show", "p")
    assert shown.json()["policy"]["overcommit"] == {"vcpu": stored}  # type: ignore[index]


@pytest.mark.parametrize("given", REFUSED)
def test_the_cli_refuses_a_ratio_that_is_not_finite(cli: Cli, given: str) -> None:
    result = cli("--json", "pools", "create", "--name", "p", "--kind", "vps-host",
                 "--overcommit", f"vcpu={given}")  # fmt: skip
    assert result.exit_code == 1, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert result.json()["error"]["code"] == "INVALID_INPUT"  # type: ignore[index]
    assert cli("--json", "pools", "show", "p").exit_code == 1  # nothing was stored


def test_a_partial_cli_update_keeps_the_other_ratios(cli: Cli) -> None:
    assert cli("pools", "create", "--name", "p", "--kind", "vps-host",
               "--overcommit", "vcpu=0.05,diskGiB=3").exit_code == 0  # fmt: skip
    updated = cli("--json", "pools", "update", "--pool", "p", "--overcommit", "memoryGiB=2")
    assert updated.exit_code == 0, updated.stderr
    ratios = {"vcpu": 0.1, "diskGiB": 3, "memoryGiB": 2}
    assert updated.json()["policy"]["overcommit"] == ratios  # type: ignore[index]


def _config(tmp_path: Path, ratio: str) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"
        f"pools:\n  - {{name: p, kind: vps-host, policy: {{overcommit: {{vcpu: {ratio}}}}}}}\n"
    )
    return str(path)


@pytest.mark.parametrize(("given", "stored", "clamped"), CLAMPED)
def test_a_fleetconfig_plan_warns_and_apply_stores_the_clamped_ratio(
    cli: Cli, tmp_path: Path, given: float, stored: float, clamped: bool
) -> None:
    path = _config(tmp_path, repr(given))
    plan = cli("plan", "-f", path)
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    for notice in _expected_notices(given, clamped):
        assert notice["message"] in plan.stdout + plan.stderr
    if not clamped:
        assert "so we keep" not in plan.stdout + plan.stderr
    applied = cli("apply", "-f", path, "--yes")
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    shown = cli("--json", "pools", "show", "p")
    assert shown.json()["policy"]["overcommit"]["vcpu"] == stored  # type: ignore[index]
    again = cli("plan", "-f", path, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout  # the clamped value is what was declared


@pytest.mark.parametrize("given", [".nan", ".inf", "-.inf"])
def test_a_fleetconfig_refuses_a_ratio_that_is_not_finite(
    cli: Cli, tmp_path: Path, given: str
) -> None:
    path = _config(tmp_path, given)
    plan = cli("plan", "-f", path)
    assert plan.exit_code == 1 and "finite" in plan.stdout + plan.stderr
    assert cli("apply", "-f", path, "--yes").exit_code == 1
    assert cli("--json", "pools", "show", "p").exit_code == 1


def test_the_console_shows_what_the_api_shows(fleet: Fleet) -> None:
    """A ratio stored before the clamp (0.05, straight into the table) reads 0.1 everywhere."""
    fleet.api.pools.create(OP, tenant_id="root", name="p", kind="vps-host")
    with fleet.write() as session:
        row = session.get(Pool, fleet.api.pools.show(OP, tenant_id="root", pool="p")["id"])
        assert row is not None
        row.overcommit = {"vcpu": 0.05, "memoryGiB": 150, "diskGiB": math.nan}
        session.add(row)
    shown = fleet.api.pools.show(OP, tenant_id="root", pool="p")
    assert shown["policy"]["overcommit"] == {"vcpu": 0.1, "memoryGiB": 100, "diskGiB": None}
    cell = pool_row(dict(shown), T0).cells[4]
    assert cell == f"×{ratio_text(0.1)}/{ratio_text(100)}/{ratio_text(1)}"
    updated = fleet.api.pools.update(OP, tenant_id="root", pool="p", overcommit={"diskGiB": 2})
    assert updated["policy"]["overcommit"] == {"vcpu": 0.1, "memoryGiB": 100, "diskGiB": 2}
