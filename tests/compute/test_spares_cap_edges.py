"""Spares above 10 on every edge: HTTP (save and draft), the CLI and FleetConfig keep 10 and say so.

Document 004: "Maximum is 10 spare instances per size. If you enter a higher number, we keep
10". Every edge asks `domain.sizes.kept_spares`; past SPARES_ASKED_MAX every edge refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.compute_settings import capped_spares_message
from bcfleet.domain.sizes import SPARES_ASKED_MAX, SPARES_MAX
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.reconcile.apply import Approved, apply, make_plan, plan_json
from bcfleet.reconcile.load import load_fleetconfig_text
from tests.support.builders import OP, token
from tests.support.compute import serverless_tenant
from tests.support.fleet import T0, open_fleet
from tests.support.fleetconfig import EXAMPLE
from tests.support.http import ApiClient, error_code, served

KEPT = [
    pytest.param(SPARES_MAX, id="at-the-maximum"),
    pytest.param(SPARES_MAX + 1, id="one-above"),
    pytest.param(15, id="fifteen"),
    pytest.param(SPARES_ASKED_MAX, id="at-the-bound"),
]
PAST_THE_BOUND = SPARES_ASKED_MAX + 1


def notices_for(asked: int) -> list[str]:
    return [] if asked <= SPARES_MAX else [capped_spares_message("large", asked)]


@pytest.fixture
def acme(fleet: Fleet) -> Iterator[ApiClient]:
    serverless_tenant(fleet)
    with served(fleet) as (_server, root):
        yield root.as_(token(fleet, "acme", "acme-admin"))


@pytest.mark.parametrize("asked", KEPT)
@pytest.mark.parametrize("path", ["/v1/settings/compute", "/v1/settings/compute/draft"])
def test_http_keeps_ten_with_the_notice(acme: ApiClient, path: str, asked: int) -> None:
    call = acme.patch if path == "/v1/settings/compute" else acme.post
    answer = call(path, json={"spares": {"large": asked}})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["sizes"]["large"]["spares"] == min(asked, SPARES_MAX)
    assert [n["message"] for n in body["notices"]] == notices_for(asked)


@pytest.mark.parametrize("path", ["/v1/settings/compute", "/v1/settings/compute/draft"])
def test_http_refuses_past_the_bound(acme: ApiClient, path: str) -> None:
    call = acme.patch if path == "/v1/settings/compute" else acme.post
    answer = call(path, json={"spares": {"large": PAST_THE_BOUND}})
    assert error_code(answer) == "INVALID_INPUT"
    assert acme.get("/v1/settings/compute").json()["sizes"]["large"]["spares"] == 0


@pytest.fixture
def world(sqlite_url: str) -> Iterator[Fleet]:
    fleet = open_fleet(sqlite_url, FakeClock(T0))
    serverless_tenant(fleet)
    yield fleet
    fleet.close()


@pytest.mark.parametrize("asked", KEPT)
def test_the_cli_keeps_ten_with_the_notice(cli: Any, world: Fleet, asked: int) -> None:
    result = cli("settings", "compute", "set", "--tenant", "acme", "--spares", f"large={asked}")
    assert result.exit_code == 0, result.stderr
    notices = [line.removeprefix("notice: ") for line in result.stdout.splitlines()]
    assert [n for n in notices if n.startswith("Maximum")] == notices_for(asked)
    shown = world.api.settings.compute_show(OP, tenant_id="acme")
    assert shown["sizes"]["large"]["spares"] == min(asked, SPARES_MAX)


def test_the_cli_refuses_past_the_bound(cli: Any, world: Fleet) -> None:
    result = cli(
        "settings", "compute", "set", "--tenant", "acme", "--spares", f"large={PAST_THE_BOUND}",
        "--json",
    )  # fmt: skip
    assert result.exit_code != 0
    assert result.json()["error"]["code"] == "INVALID_INPUT"


def with_large_spares(asked: int) -> str:
    return EXAMPLE.read_text().replace(
        "large:  { enabled: true, spares: 2 }", f"large:  {{ enabled: true, spares: {asked} }}"
    )


@pytest.mark.parametrize("asked", KEPT)
def test_fleetconfig_plans_the_notice_and_applies_ten(fleet: Fleet, asked: int) -> None:
    desired = load_fleetconfig_text(with_large_spares(asked), file="fleet.yaml")
    plan = make_plan(fleet, OP, desired)
    assert plan.errors == ()
    warned = [w.details["message"] for w in plan.warnings]
    assert [m for m in warned if m.startswith("Maximum")] == notices_for(asked)
    apply(fleet, OP, Approved(desired, plan_json(plan), False, auto_approve=True))
    shown = fleet.api.settings.compute_show(OP, tenant_id="acme")
    assert shown["sizes"]["large"]["spares"] == min(asked, SPARES_MAX)


def test_fleetconfig_refuses_past_the_bound() -> None:
    with pytest.raises(InvalidInputError):
        load_fleetconfig_text(with_large_spares(PAST_THE_BOUND), file="fleet.yaml")
