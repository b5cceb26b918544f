"""The CLI's last net: an error bcfleet did not expect is the INTERNAL error document, exit 1,
with the traceback on stderr only under --debug."""

from __future__ import annotations

import json

import pytest

from bcfleet.api.tenants import TenantsAPI
from tests.conftest import run_cli


@pytest.fixture
def broken_tenants_list(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_args: object, **_kwargs: object) -> object:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(TenantsAPI, "list", explode)


@pytest.mark.usefixtures("broken_tenants_list")
def test_an_unexpected_error_is_internal_json_without_a_traceback(sqlite_url: str) -> None:
    result = run_cli("--json", "tenants", "list", db=sqlite_url)
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INTERNAL" and "--debug" in error["message"]
    assert error["details"] == {"type": "ZeroDivisionError"}
    assert "Traceback" not in result.stderr


@pytest.mark.usefixtures("broken_tenants_list")
def test_debug_prints_the_traceback_on_stderr(sqlite_url: str) -> None:
    result = run_cli("tenants", "list", "--debug", db=sqlite_url)
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "ZeroDivisionError: a bug" in result.stderr
    assert "INTERNAL" in result.stderr
