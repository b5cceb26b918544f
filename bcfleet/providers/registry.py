"""Open the ProviderImpl a provider account names; for providerAccounts and the reconciler.

An account stores the provider's name, the environment variable holding its
token (``tokenEnv``) and an optional endpoint (the fake server's URL in tests
and demos); never the token.
"""

from __future__ import annotations

from typing import Any

from bcfleet.errors import InvalidInputError
from bcfleet.providers.base import ProviderImpl
from bcfleet.providers.hetzner import DEFAULT_BASE_URL, HetznerProvider

PROVIDERS = ("hetzner",)


def open_provider(
    provider: str, *, token_env: str, endpoint: str | None = None, **options: Any
) -> ProviderImpl:
    """A client for the account's provider; ``options`` go to its constructor (clock, retry, …)."""
    if provider != "hetzner":
        raise InvalidInputError(
            f"unknown provider {provider!r}", {"provider": provider, "known": list(PROVIDERS)}
        )
    if not token_env:
        raise InvalidInputError("a provider account needs tokenEnv", {"provider": provider})
    return HetznerProvider(token_env=token_env, base_url=endpoint or DEFAULT_BASE_URL, **options)
