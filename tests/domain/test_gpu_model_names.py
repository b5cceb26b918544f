"""A name that becomes an identifier has one rule: a pool's GPU model names its meter
(gpu.<model>.hours), so the CLI, HTTP and FleetConfig refuse the same values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bcfleet.domain.bounds import GPU_MODEL
from bcfleet.domain.usage import gpu_meter
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.builders import OP
from tests.support.fleet import run_cli
from tests.support.http import served

BAD = [" L40S ", 'l40s, "ada"', "L40S\n", "", "-x", "a" * 64, "L40S\u202e"]


@pytest.mark.parametrize("model", [m for m in BAD if m], ids=repr)
def test_the_cli_refuses_a_gpu_model_the_schema_refuses(model: str, sqlite_url: str) -> None:
    Fleet.open(sqlite_url).close()
    result = run_cli(
        "--json", "pools", "create", "--tenant", "root", "--name", "p", "--kind", "vps-host",
        "--gpu-model", model, db=sqlite_url,
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INVALID_INPUT" and error["details"]["field"] == "gpuModel"


@pytest.mark.parametrize("model", [m for m in BAD if m], ids=repr)
def test_http_refuses_it_too(model: str, fleet: Fleet) -> None:
    with served(fleet) as (_server, api):
        answer = api.post("/v1/pools", json={"name": "p", "kind": "vps-host", "gpuModel": model})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "INVALID_INPUT"


def test_the_fleetconfig_schema_states_the_same_pattern() -> None:
    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "schemas" / "fleetconfig.schema.json").read_text())
    assert schema["$defs"]["pool"]["properties"]["gpuModel"]["pattern"] == GPU_MODEL.pattern


def test_a_good_model_names_a_good_meter(fleet: Fleet) -> None:
    fleet.api.pools.create(OP, tenant_id="root", name="p", kind="vps-host", gpu_model="L40S")
    assert gpu_meter("L40S") == "gpu.l40s.hours"


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda f: f.api.tenants.create(OP, "acme\n"), id="tenant-id"),
        pytest.param(
            lambda f: f.api.pools.create(OP, tenant_id="root", name="vps\n", kind="vps-host"),
            id="pool-name",
        ),
    ],
)
def test_a_trailing_newline_is_no_part_of_a_name(call: Any, fleet: Fleet) -> None:
    with pytest.raises(InvalidInputError):
        call(fleet)
