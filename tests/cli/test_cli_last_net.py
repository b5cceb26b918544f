"""The last net of the CLI and the server: an error bcfleet did not expect is the INTERNAL error
document (exit 1, HTTP 500), with the traceback on stderr only under --debug."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from bcfleet.api.tenants import TenantsAPI
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from tests.support.builders import token
from tests.support.fleet import run_cli


@pytest.fixture
def broken_tenants_list(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_args: object, **_kwargs: object) -> object:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(TenantsAPI, "list", explode)


@pytest.mark.usefixtures("broken_tenants_list")
def test_an_unexpected_error_is_internal_json_without_a_traceback(sqlite_url: str) -> None:
    Fleet.open(sqlite_url).close()
    result = run_cli("--json", "tenants", "list", db=sqlite_url)
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INTERNAL" and "--debug" in error["message"]
    assert error["details"] == {"type": "ZeroDivisionError"}
    assert "Traceback" not in result.stderr


@pytest.mark.usefixtures("broken_tenants_list")
def test_debug_prints_the_traceback_on_stderr(sqlite_url: str) -> None:
    Fleet.open(sqlite_url).close()
    result = run_cli("tenants", "list", "--debug", db=sqlite_url)
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "ZeroDivisionError: a bug" in result.stderr
    assert "INTERNAL" in result.stderr


@pytest.mark.usefixtures("broken_tenants_list")
@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "debug"])
def test_the_server_answers_internal_and_logs_a_traceback_only_under_debug(
    fleet: Fleet, debug: bool, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.getLogger("bcfleet"), "propagate", True)  # `jobs` may unset it
    app = create_app(fleet, tally_seconds=0, debug=debug)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as http:
        bearer = token(fleet, "root", "ops")
        answer = http.get("/v1/tenants", headers={"Authorization": f"Bearer {bearer}"})
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "INTERNAL"
    assert "a bug" not in answer.text  # nothing of the exception reaches the client
    failures = [r for r in caplog.records if r.name == "bcfleet.http" and "failed" in r.message]
    assert failures and "ZeroDivisionError" in caplog.text
    assert any(r.exc_info for r in failures) is debug
