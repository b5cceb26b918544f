"""Every code of the error tree survives the trip over HTTP: the server renders it, the HTTP
client (which the host agent uses too) decodes it to the same class, message and details."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bcfleet.api.tenants import TenantsAPI
from bcfleet.client.fleet_client import FleetClient, error_from_response
from bcfleet.errors import FleetError, NoCapacityError, error_classes
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from tests.support.builders import token

CODES = sorted(code for code in error_classes() if code != "INTERNAL")


def an_error(cls: type[FleetError]) -> FleetError:
    if cls is NoCapacityError:
        return NoCapacityError("no Large free", instance_size="large", retry_after_seconds=7)
    error = cls(f"a {cls.code} error", {"field": "x", "n": 3})
    return error


def test_the_tree_has_every_documented_code() -> None:
    documented = {
        "INVALID_INPUT", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "CONFLICT",
        "QUOTA_EXCEEDED", "CAPACITY_UNAVAILABLE", "UNSUPPORTED", "SIZE_IN_USE", "NO_CAPACITY",
        "LOCKED", "STALE_PLAN",
    }  # fmt: skip
    assert documented <= set(CODES)


@pytest.mark.parametrize("code", CODES)
def test_a_code_round_trips_over_http(
    code: str, fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = an_error(error_classes()[code])

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise sent

    bearer = token(fleet, "root", "ops")
    monkeypatch.setattr(TenantsAPI, "list", refuse)
    with BackgroundServer(create_app(fleet, tally_seconds=0)) as server:
        with FleetClient(server.url, bearer) as client, pytest.raises(FleetError) as caught:
            client.tenants()
        raw = httpx.get(f"{server.url}/v1/tenants", headers={"Authorization": f"Bearer {bearer}"})
    assert raw.status_code == sent.http_status
    for received in (caught.value, error_from_response(raw)):
        assert type(received) is type(sent)
        assert (received.code, received.message, received.details) == (
            sent.code,
            sent.message,
            sent.details,
        )
        assert received.retry_after_seconds == sent.retry_after_seconds
