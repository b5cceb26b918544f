"""Open the ProviderImpl a provider account names; for providerAccounts and the reconciler.

An account stores the provider's name, where its token comes from (the
environment variable ``tokenEnv`` that root's admin named, or the tenant's own
token sealed with the operator's key, handed here unsealed as a Secret), and an
optional endpoint that only root's admin sets (the fake server's URL in tests
and demos). ``egress`` guards every connection (bcfleet/egress.py).
"""

from __future__ import annotations

from typing import Any

from bcfleet.domain.states import PROVIDERS
from bcfleet.egress import EgressGuard
from bcfleet.errors import InvalidInputError
from bcfleet.providers.base import ProviderImpl
from bcfleet.providers.hetzner import DEFAULT_BASE_URL, HetznerProvider
from bcfleet.secretbox import Secret


def open_provider(
    provider: str,
    *,
    token_env: str | None = None,
    token: Secret | None = None,
    endpoint: str | None = None,
    egress: EgressGuard | None = None,
    **options: Any,
) -> ProviderImpl:
    """A client for the account's provider; ``options`` go to its constructor (clock, retry, …)."""
    if provider != "hetzner":
        raise InvalidInputError(
            f"unknown provider {provider!r}", {"provider": provider, "known": list(PROVIDERS)}
        )
    if not token_env and token is None:
        raise InvalidInputError("a provider account needs a token", {"provider": provider})
    return HetznerProvider(
        token_env=token_env or None,
        token=token,
        egress=egress,
        base_url=endpoint or DEFAULT_BASE_URL,
        **options,
    )
