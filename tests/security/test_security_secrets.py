"""Provider secrets a tenant cannot reach: no server variable by name, no endpoint of its choosing,
its own token sealed at rest and sent only to the provider's host."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlmodel import select

from bcfleet.errors import ForbiddenError, InvalidInputError, UnauthenticatedError
from bcfleet.fleet import Fleet
from bcfleet.providers.hetzner import HetznerProvider
from bcfleet.providers.offer_catalog import AccountRef
from bcfleet.secretbox import Secret, SecretBox
from bcfleet.settings import FleetSettings, load_fleet_settings
from bcfleet.store.models import ProviderAccount
from tests.support.builders import OP, token
from tests.support.fleet import run_cli
from tests.support.http import error_code, served
from tests.support.security import allow_egress, capturing_server, set_secret_key

SERVER_SECRET = "server-only-value-8c1f"
TENANT_TOKEN = "acme-hcloud-token-5d2e9a"
KEY = Fernet.generate_key().decode()


@pytest.fixture
def acme(fleet: Fleet) -> str:
    fleet.api.tenants.create(OP, "acme")
    return token(fleet, "acme", "alice")


def _texts(*responses: Any) -> str:
    return " ".join(r.text for r in responses)


def test_a_tenant_cannot_send_a_server_variable_anywhere(
    fleet: Fleet, acme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TEST_VAR", SERVER_SECRET)
    allow_egress(fleet)  # even with loopback allowed, nothing may go out
    with capturing_server() as capture, served(fleet) as (_server, root):
        client = root.as_(acme)
        endpoint = capture.url + "/v1"
        attempts = [
            {"tokenEnv": "SECRET_TEST_VAR", "endpoint": endpoint},
            {"tokenEnv": "SECRET_TEST_VAR"},
            {"token": TENANT_TOKEN, "endpoint": endpoint},
        ]
        answers = [
            client.post("/v1/provider-accounts", json={"name": "x", "provider": "hetzner", **body})
            for body in attempts
        ]
        offers = client.get("/v1/provider-accounts/x/offers")
        listed = client.get("/v1/provider-accounts")
    assert [(a.status_code, error_code(a)) for a in answers] == [(403, "FORBIDDEN")] * 3
    assert "SECRET_TEST_VAR" not in answers[0].json()["error"]["details"].values()
    assert offers.status_code == 404
    assert listed.json()["items"] == []
    assert capture.requests == []
    assert SERVER_SECRET not in _texts(*answers, offers, listed)


def test_root_admin_token_may_name_a_server_variable(fleet: Fleet) -> None:
    with served(fleet) as (_server, root):
        made = root.post(
            "/v1/provider-accounts",
            json={"name": "hz", "provider": "hetzner", "tokenEnv": "HCLOUD_TOKEN"},
        )
    assert made.status_code == 201
    assert (made.json()["tokenEnv"], made.json()["hasToken"]) == ("HCLOUD_TOKEN", False)


def test_root_admin_acting_for_a_tenant_may_name_a_variable_and_an_endpoint(
    fleet: Fleet, acme: str
) -> None:
    made = fleet.api.provider_accounts.create(
        OP, tenant_id="acme", name="hz", provider="hetzner", token_env="HZ", endpoint="http://x/v1"
    )
    assert (made["tokenEnv"], made["endpoint"]) == ("HZ", "http://x/v1")


def test_a_tenant_token_is_sealed_and_sent_only_to_the_provider_host(
    fleet: Fleet, acme: str
) -> None:
    set_secret_key(fleet, KEY)
    with capturing_server() as capture, served(fleet) as (_server, root):
        client = root.as_(acme)
        made = client.post(
            "/v1/provider-accounts",
            json={"name": "mine", "provider": "hetzner", "token": TENANT_TOKEN},
        )
        assert made.status_code == 201, made.text
        # Root's admin points acme's account at the provider (here: a local stand-in).
        fleet.api.provider_accounts.update(
            OP, tenant_id="acme", name="mine", provider="hetzner", endpoint=capture.url + "/v1"
        )
        refused = client.get("/v1/provider-accounts/mine/offers")  # loopback not allowed yet
        assert capture.requests == []
        allow_egress(fleet)
        offers = client.get("/v1/provider-accounts/mine/offers")
        listed = client.get("/v1/provider-accounts")
    assert made.json()["hasToken"] is True and made.json()["tokenEnv"] is None
    assert (refused.status_code, error_code(refused)) == (503, "PROVIDER_UNAVAILABLE")
    assert offers.status_code == 200, offers.text
    assert capture.requests, "the provider was asked"
    for request in capture.requests:
        assert request["headers"]["host"] == capture.host
        assert request["path"].startswith("/v1/")
        assert request["headers"]["authorization"] == f"Bearer {TENANT_TOKEN}"
    assert TENANT_TOKEN not in _texts(made, refused, offers, listed)
    with fleet.engine.connect() as connection:
        rows = connection.execute(text("SELECT * FROM provider_accounts")).all()
    assert len(rows) == 1
    stored = " ".join(str(value) for value in rows[0])
    assert TENANT_TOKEN not in stored
    assert SecretBox(KEY).open(rows[0]._mapping["sealed_token"]) == Secret(TENANT_TOKEN)


def test_without_an_operator_key_a_token_is_refused_not_stored(fleet: Fleet, acme: str) -> None:
    with served(fleet) as (_server, root):
        answer = root.as_(acme).post(
            "/v1/provider-accounts",
            json={"name": "mine", "provider": "hetzner", "token": TENANT_TOKEN},
        )
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert "BCFLEET_SECRET_KEY" in answer.json()["error"]["message"]
    assert TENANT_TOKEN not in answer.text
    assert fleet.api.provider_accounts.list(OP, tenant_id="acme")["items"] == []


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("has space-" + TENANT_TOKEN, id="space"),
        pytest.param(TENANT_TOKEN + "\r\nX-Evil: 1", id="header-injection"),
        pytest.param("x" * 5000 + TENANT_TOKEN, id="too-long"),
    ],
)
def test_a_bad_token_is_refused_without_quoting_it(fleet: Fleet, acme: str, bad: str) -> None:
    set_secret_key(fleet, KEY)
    with served(fleet) as (_server, root):
        answer = root.as_(acme).post(
            "/v1/provider-accounts", json={"name": "mine", "provider": "hetzner", "token": bad}
        )
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert TENANT_TOKEN not in answer.text


def test_an_account_needs_a_token(fleet: Fleet, acme: str) -> None:
    with pytest.raises(InvalidInputError):
        fleet.api.provider_accounts.create(acme, tenant_id="acme", name="a", provider="hetzner")
    with pytest.raises(InvalidInputError):
        fleet.api.provider_accounts.create(
            OP, tenant_id="acme", name="a", provider="hetzner", token_env="A", token="b"
        )


def test_a_tenant_cannot_repoint_or_rekey_through_update(fleet: Fleet, acme: str) -> None:
    set_secret_key(fleet, KEY)
    fleet.api.provider_accounts.create(
        acme, tenant_id="acme", name="mine", provider="hetzner", token=TENANT_TOKEN
    )
    for change in ({"token_env": "SECRET_TEST_VAR"}, {"endpoint": "http://evil.example/v1"}):
        with pytest.raises(ForbiddenError):
            fleet.api.provider_accounts.update(
                acme, tenant_id="acme", name="mine", provider="hetzner", **change
            )


def test_a_changed_key_is_unauthenticated_and_rotation_keeps_old_tokens(
    fleet: Fleet, acme: str
) -> None:
    old, new = KEY, Fernet.generate_key().decode()
    set_secret_key(fleet, old)
    fleet.api.provider_accounts.create(
        acme, tenant_id="acme", name="mine", provider="hetzner", token=TENANT_TOKEN
    )
    with fleet.read() as session:
        (row,) = session.exec(select(ProviderAccount)).all()
        ref = AccountRef.of(row)
    set_secret_key(fleet, new)
    with pytest.raises(UnauthenticatedError) as caught:
        fleet.api.offer_catalog.open(ref)
    assert TENANT_TOKEN not in str(caught.value.to_json())
    set_secret_key(fleet, f"{new},{old}")
    fleet.api.offer_catalog.open(ref).close()
    set_secret_key(fleet, None)
    with pytest.raises(UnauthenticatedError):
        fleet.api.offer_catalog.open(ref)


def test_no_repr_shows_a_secret() -> None:
    secret = Secret(TENANT_TOKEN)
    sealed = SecretBox(KEY).seal(secret)
    ref = AccountRef("pacct_1", "acme", "mine", "hetzner", None, None, sealed)
    provider = HetznerProvider(token=secret)
    try:
        shown = " ".join(
            [
                repr(secret),
                str(secret),
                f"{secret}",
                repr(SecretBox(KEY)),
                repr(FleetSettings(secret_key=KEY)),
                repr(ref),
                repr(provider),
                repr(provider._client.auth),
            ]
        )
    finally:
        provider.close()
    assert TENANT_TOKEN not in shown and KEY not in shown and sealed not in shown


def test_the_key_comes_from_the_environment_or_fleet_toml(tmp_path: Path) -> None:
    assert (
        load_fleet_settings(tmp_path / "none.toml", {"BCFLEET_SECRET_KEY": KEY}).secret_key == KEY
    )
    (tmp_path / "secret.key").write_text(KEY + "\n")
    config = tmp_path / "fleet.toml"
    config.write_text('secret_key_file = "secret.key"\n')
    assert load_fleet_settings(config, {}).secret_key == KEY
    config.write_text(f'secret_key = "{KEY}"\n')
    assert load_fleet_settings(config, {}).secret_key == KEY
    config.write_text('secret_key_file = "missing.key"\n')
    with pytest.raises(InvalidInputError):
        load_fleet_settings(config, {})
    assert load_fleet_settings(tmp_path / "none.toml", {}).secret_key is None


def test_a_malformed_key_is_invalid_input(fleet: Fleet, acme: str) -> None:
    set_secret_key(fleet, "not-a-fernet-key")
    with pytest.raises(InvalidInputError) as caught:
        fleet.api.provider_accounts.create(
            acme, tenant_id="acme", name="mine", provider="hetzner", token=TENANT_TOKEN
        )
    assert "not-a-fernet-key" not in str(caught.value.to_json())


def test_the_cli_reads_the_token_from_a_file_or_stdin(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BCFLEET_SECRET_KEY", KEY)
    secret_file = tmp_path / "token"
    secret_file.write_text(TENANT_TOKEN + "\n")
    base = ("provider-accounts", "create", "--provider", "hetzner", "--json")
    from_file = run_cli(*base, "--name", "a", "--token-file", str(secret_file), db=sqlite_url)
    monkeypatch.setattr(sys, "stdin", io.StringIO(TENANT_TOKEN + "\n"))
    from_stdin = run_cli(*base, "--name", "b", "--token-stdin", db=sqlite_url)
    neither = run_cli(*base, "--name", "c", db=sqlite_url)
    both = run_cli(
        *base, "--name", "d", "--token-env", "X", "--token-file", str(secret_file), db=sqlite_url
    )
    listed = run_cli("provider-accounts", "list", db=sqlite_url)
    assert from_file.exit_code == 0, from_file.stderr
    assert from_stdin.exit_code == 0, from_stdin.stderr
    assert json.loads(from_file.stdout)["hasToken"] is True
    assert (neither.exit_code, both.exit_code) == (64, 64)
    assert "stored" in listed.stdout
    outputs = [from_file, from_stdin, neither, both, listed]
    assert all(TENANT_TOKEN not in r.stdout + r.stderr for r in outputs)


def test_a_tenant_on_the_cli_is_forbidden_a_server_variable(
    fleet: Fleet, acme: str, sqlite_url: str
) -> None:
    result = run_cli(
        "provider-accounts", "create", "--tenant", "acme", "--name", "x", "--provider", "hetzner",
        "--token-env", "SECRET_TEST_VAR", "--json",
        db=sqlite_url, env={"BCFLEET_TOKEN": acme},
    )  # fmt: skip
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["code"] == "FORBIDDEN"
