"""What the hostile CLI walk found, each pinned at the depth it was fixed.

- A NUL, or bytes that are not UTF-8, anywhere on the command line: INVALID_INPUT (the CLI's
  rule for its argv is the HTTP edge's rule for its text).
- A usage error under --json is one JSON document, also when main() is given its argv.
- Seconds on the command line (intervals, timeouts, delays, --lock-timeout) are finite and
  within a day; the streaming deploy's poll and timeout too, in the API.
- Page lengths (jobs list --runs, events, deliveries) have one bound, also on PostgreSQL.
- A URL Python cannot split (``http://[::1``) is INVALID_INPUT for webhooks, provider
  endpoints and --db, never a ValueError.
- A delivery id past what a column holds is NOT_FOUND, as a made-up one.
- --db naming a device (/dev/null) or a path too long is INVALID_INPUT.
- plan --out that cannot be written prints only the error document.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bcfleet.domain.bounds import (
    PAGE_MAX,
    WAIT_SECONDS_MAX,
    check_limit,
    http_url,
    seconds_problem,
    url_problem,
)
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import recent_runs
from bcfleet.jobs.webhooks import enqueue
from tests.support.builders import OP, hosted_pool
from tests.support.fleet import CliResult, run_cli


def strict_json(raw: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(raw, parse_constant=refuse)


def error_of(result: CliResult, exit_code: int = 1) -> dict[str, Any]:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    body: dict[str, Any] = strict_json(result.stdout)["error"]
    return body


# ---------------------------------------------------------------------------
# The bounds, as tables


@pytest.mark.parametrize(
    ("url", "fine"),
    [
        pytest.param("https://hooks.example/x", True, id="https"),
        pytest.param("http://hooks.example:8080/x", True, id="with-a-port"),
        pytest.param("http://[::1", False, id="unclosed-bracket"),
        pytest.param("http://hooks.example:99999/", False, id="port-out-of-range"),
        pytest.param("http://hooks.example:port/", False, id="port-not-a-number"),
        pytest.param("ftp://x", False, id="ftp"),
        pytest.param("mysql://x", False, id="mysql"),
        pytest.param("https://", False, id="no-host"),
        pytest.param("https://a\x00b/", False, id="nul"),
        pytest.param(None, False, id="not-text"),
    ],
)
def test_an_http_url_has_a_scheme_a_host_and_a_numeric_port(url: Any, fine: bool) -> None:
    assert (http_url(url) is not None) is fine
    assert (url_problem("url", url, 2048) is None) is fine


@pytest.mark.parametrize(
    ("value", "fine"),
    [(0.0, True), (WAIT_SECONDS_MAX, True), (-1.0, False), (math.nan, False),
     (math.inf, False), (1e23, False)],
    ids=["zero", "a-day", "negative", "nan", "inf", "huge"],
)  # fmt: skip
def test_seconds_are_finite_and_at_most_a_day(value: float, fine: bool) -> None:
    assert (seconds_problem("--timeout", value) is None) is fine


@pytest.mark.parametrize("limit", [0, -1, PAGE_MAX + 1, 10**23])
def test_a_page_is_one_to_a_thousand_long(limit: int) -> None:
    with pytest.raises(InvalidInputError, match="limit must be between 1 and 1000"):
        check_limit(limit)
    assert check_limit(PAGE_MAX) == PAGE_MAX


# ---------------------------------------------------------------------------
# The command line


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["tenants", "create", "a\x00b"], id="nul-in-an-argument"),
        pytest.param(["validate", "-f", "fleet\x00.yaml"], id="nul-in-a-path"),
        pytest.param(["hosts", "list", "--tenant", "caf\udce9"], id="bytes-not-utf8"),
    ],
)
def test_a_command_line_no_database_can_store_is_invalid_input(cli: Any, args: list[str]) -> None:
    error = error_of(cli("--json", *args))
    assert error["code"] == "INVALID_INPUT" and "argument" in error["message"], error


def test_a_usage_error_under_json_is_one_json_document_from_main_argv(cli: Any) -> None:
    result = cli("flavors", "create", "--json", "--tenant", "root", "--vcpu", "NaN")
    error = error_of(result, exit_code=64)
    assert error["code"] == "INVALID_INPUT" and error["details"] == {"usage": True}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["agent", "simulate", "--once", "--boot-seconds", "nan"], id="boot-nan"),
        pytest.param(["agent", "simulate", "--once", "--boot-seconds", "1e23"], id="boot-huge"),
        pytest.param(["agent", "simulate", "--once", "--interval", "inf"], id="interval-inf"),
        pytest.param(["jobs", "tick", "--check", "--grace", "-5"], id="grace-negative"),
        pytest.param(["services", "deploy", "svc_x", "--wait", "--poll", "0"], id="poll-zero"),
        pytest.param(["services", "deploy", "svc_x", "--wait", "--timeout", "inf"], id="timeout-inf"),
    ],
)  # fmt: skip
def test_seconds_on_the_command_line_are_bounded(cli: Any, args: list[str]) -> None:
    error = error_of(cli("--json", *args), exit_code=64)
    assert "from" in error["message"] and "86,400" in error["message"], error


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e23", "-1"])
def test_apply_lock_timeout_is_bounded(cli: Any, tmp_path: Path, timeout: str) -> None:
    document = tmp_path / "fleet.yaml"
    document.write_text("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants: [{id: root}]\n")
    result = cli("--json", "apply", "-f", str(document), "--yes", "--lock-timeout", timeout)
    assert error_of(result, exit_code=64)["code"] == "INVALID_INPUT"


def test_plan_out_that_cannot_be_written_prints_only_the_error(cli: Any, tmp_path: Path) -> None:
    document = tmp_path / "fleet.yaml"
    document.write_text("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants: [{id: acme}]\n")
    result = cli("--json", "plan", "-f", str(document), "--out", str(tmp_path / "no" / "p.json"))
    assert error_of(result)["code"] == "INVALID_INPUT"


@pytest.mark.parametrize(
    "db",
    [
        pytest.param("http://[::1", id="unclosed-bracket"),
        pytest.param("/dev/null", id="a-device"),
        pytest.param("x" * 10_000, id="a-name-too-long"),
    ],
)
def test_a_database_url_that_cannot_be_a_fleet_is_invalid_input(db: str) -> None:
    for verb in (["tenants", "list"], ["tenants", "create", "acme"]):
        error = error_of(run_cli("--json", *verb, "--db", db))
        assert error["code"] == "INVALID_INPUT" and error["details"]["reason"] == "bad_database"


# ---------------------------------------------------------------------------
# The API, on SQLite and PostgreSQL


def test_a_webhook_or_endpoint_url_python_cannot_split_is_invalid_input(any_fleet: Fleet) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    with pytest.raises(InvalidInputError, match="url must be an http or https URL"):
        any_fleet.api.webhooks.create(OP, tenant_id="acme", url="http://[::1")
    with pytest.raises(InvalidInputError, match="endpoint must be an http or https URL"):
        any_fleet.api.provider_accounts.create(
            OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
            endpoint="http://[::1",
        )  # fmt: skip


@pytest.mark.parametrize("delivery", [10**23, -1, 2**63])
def test_a_delivery_id_past_the_column_is_not_found(any_fleet: Fleet, delivery: int) -> None:
    hosted_pool(any_fleet)
    hook = any_fleet.api.webhooks.create(OP, tenant_id="acme", url="https://hook.invalid/x")
    enqueue(any_fleet, any_fleet.now())
    with pytest.raises(NotFoundError, match="not found"):
        any_fleet.api.webhooks.redeliver(OP, hook["id"], delivery)


@pytest.mark.parametrize("limit", [-1, 0, 10**23])
def test_job_runs_are_listed_a_bounded_page_at_a_time(any_fleet: Fleet, limit: int) -> None:
    with pytest.raises(InvalidInputError, match="limit must be between 1 and 1000"):
        recent_runs(any_fleet, limit=limit)


@pytest.mark.parametrize(
    ("poll", "timeout"),
    [(0.0, 60.0), (-1.0, 60.0), (math.nan, 60.0), (5.0, math.inf), (5.0, math.nan)],
    ids=["poll-zero", "poll-negative", "poll-nan", "timeout-inf", "timeout-nan"],
)
def test_a_streaming_deploy_never_loops_forever(fleet: Fleet, poll: float, timeout: float) -> None:
    fleet.api.tenants.create(OP, "acme")
    service = fleet.api.services.create(OP, tenant_id="acme", workspace="prod", name="web")
    steps = fleet.api.services.deploy_stream(
        OP, service["id"], poll_seconds=poll, timeout_seconds=timeout
    )
    with pytest.raises(InvalidInputError, match="Seconds must be"):
        next(steps)
