"""start_fake_provider(): the local fake Hetzner on loopback, and a provider account pointing at it.

For ``fleet demo`` and tests::

    fake = start_fake_provider(clock=fleet.clock)
    account = fake.create_account(fleet)           # provider account "fake-hetzner"
    fleet.api.pools.create(OP, tenant_id=ROOT_TENANT, name="hz-fsn", kind="provider",
                           provider_account=account["name"])
    ...                                             # flavors with offerId "cx23", instances
    run_reconcile(fleet, fleet.now())              # servers appear on the fake
    fake.stop()

The account keeps only the name of the environment variable holding the token
(``BCFLEET_FAKE_HCLOUD_TOKEN`` by default); this helper puts a token there when
it is unset, in this process's environment, because the reconciler reads the
token from the environment at each request. A scheduler in another process
needs the same variable set.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bcfleet.api.auth import LOCAL_OPERATOR, Credential
from bcfleet.api.documents import ProviderAccountJson
from bcfleet.clock import Clock
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.providers.fake_server import FakeHetzner

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

FAKE_TOKEN_ENV = "BCFLEET_FAKE_HCLOUD_TOKEN"
FAKE_TOKEN = "fake-hcloud-token"


@dataclass
class FakeProvider:
    """A running fake provider and the environment variable that holds its token."""

    server: FakeHetzner
    token_env: str

    @property
    def url(self) -> str:
        """The endpoint to give a provider account (``http://127.0.0.1:PORT/v1``)."""
        return self.server.url

    def create_account(
        self,
        fleet: ApiHandle,
        *,
        tenant_id: str = ROOT_TENANT,
        name: str = "fake-hetzner",
        credential: Credential | None = LOCAL_OPERATOR,
    ) -> ProviderAccountJson:
        """Create a hetzner provider account whose endpoint is this fake."""
        return fleet.api.provider_accounts.create(
            credential,
            tenant_id=tenant_id,
            name=name,
            provider="hetzner",
            token_env=self.token_env,
            endpoint=self.url,
        )

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_fake_provider(
    *,
    clock: Clock | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    token_env: str = FAKE_TOKEN_ENV,
    environ: MutableMapping[str, str] | None = None,
    boot_seconds: float = 5.0,
) -> FakeProvider:
    """Start the fake on loopback (a free port unless given) serving in a background thread.

    It accepts the token found in ``token_env`` (set to a fixed fake token when
    unset). Pass the fleet's clock so that server boot times and rate-limit
    resets follow the fleet's time.
    """
    env = os.environ if environ is None else environ
    token = env.get(token_env) or FAKE_TOKEN
    env[token_env] = token
    server = FakeHetzner(token=token, clock=clock, host=host, port=port, boot_seconds=boot_seconds)
    return FakeProvider(server=server.start(), token_env=token_env)
