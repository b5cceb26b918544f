"""Opening a provider from an account's fields, and the fake as ``fleet provider-fake`` runs it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bcfleet.errors import InvalidInputError
from bcfleet.providers.base import ProviderImpl
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.providers.hetzner import DEFAULT_BASE_URL, HetznerProvider
from bcfleet.providers.registry import open_provider
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_an_account_opens_its_provider_at_its_endpoint() -> None:
    with FakeHetzner(token="t") as fake:
        provider = open_provider("hetzner", token_env="HC", endpoint=fake.url, environ={"HC": "t"})
        try:
            assert isinstance(provider, ProviderImpl)
            assert provider.list_servers({}) == []
        finally:
            provider.close()


def test_without_an_endpoint_the_public_api_is_used() -> None:
    provider = open_provider("hetzner", token_env="HCLOUD_TOKEN")
    assert isinstance(provider, HetznerProvider)
    assert provider.base_url == DEFAULT_BASE_URL
    provider.close()


@pytest.mark.parametrize(
    ("name", "token_env"),
    [pytest.param("aws", "X", id="unknown-provider"), pytest.param("hetzner", "", id="no-env")],
)
def test_bad_accounts_are_invalid_input(name: str, token_env: str) -> None:
    with pytest.raises(InvalidInputError):
        open_provider(name, token_env=token_env)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_runs_the_fake_in_the_foreground() -> None:
    port = _free_port()
    code = f"from bcfleet.providers.fake_server import serve; serve('127.0.0.1', {port})"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def status() -> int | None:
            try:
                return httpx.get(
                    f"http://127.0.0.1:{port}/v1/server_types",
                    headers={"Authorization": "Bearer any"},
                    timeout=1.0,
                ).status_code
            except httpx.TransportError:
                return None

        assert wait_for(status, timeout=15, what="the fake provider") == 200
    finally:
        process.terminate()
        process.wait(timeout=10)
