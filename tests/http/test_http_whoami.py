"""`GET /v1/whoami`: whom a token acts as (its tenant, role and principal), as the console's
header says it; the local operator is root's admin without a principal."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from tests.support.builders import token
from tests.support.http import ApiClient, error_code, served


@pytest.fixture
def api(fleet: Fleet) -> Iterator[ApiClient]:
    with served(fleet) as (_server, client):
        yield client


def test_a_token_is_told_its_tenant_role_and_principal(fleet: Fleet, api: ApiClient) -> None:
    fleet.api.tenants.create(OP, "acme")
    alice = token(fleet, "acme", "alice", role="member")
    answer = api.as_(alice).get("/v1/whoami")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["tenantId"], body["role"], body["principal"]) == ("acme", "member", "alice")
    assert body["principalId"]
    assert body["operator"] is False


def test_without_a_live_token_it_is_401(api: ApiClient) -> None:
    answer = api.as_("bcf_unknown").get("/v1/whoami")
    assert answer.status_code == 401 and error_code(answer) == "UNAUTHENTICATED"


def test_the_local_operator_is_roots_admin_without_a_principal(fleet: Fleet) -> None:
    assert fleet.api.iam.whoami(OP) == {
        "tenantId": "root", "role": "admin", "principal": None, "principalId": None,
        "operator": True,
    }  # fmt: skip
