"""Hetzner Cloud as a ProviderImpl over httpx; used by the reconciler and providerAccounts.offers.

Offers come from ``GET /server_types`` alone (every page; see
bcfleet/providers/hetzner_offers.py): Hetzner removed ``GET /datacenters``,
and a server's place is its ``location``. Lists are followed page by page as
bcfleet/providers/paging.py decides (``meta.pagination`` or the ``Link``
header).

Creating and deleting a server answer with an action; the client polls
``GET /actions/{id}`` every ``RetryPolicy.action_poll_interval`` seconds
(through the clock) until it ends with ``success`` or ``error``, and an error
is translated from the action's own error code. A create whose action failed
deletes the half-made server before raising; an action still running after
``RetryPolicy.action_timeout`` seconds is PROVIDER_UNAVAILABLE with an unknown
outcome, which the reconciler settles from the next listing.

The API token is either read from the environment variable root's admin named
(``token_env``) on every request, or given as a :class:`~bcfleet.secretbox.Secret`
(a tenant's own token, unsealed from the database); either way it goes on the
requests to ``base_url`` only (redirects are not followed), and is never
logged, shown in a repr, or put into an error. ``egress`` puts every connection
behind the egress guard (bcfleet/egress.py): accounts whose endpoint root's
admin did not set explicitly for root are opened that way.

Server names are the idempotency key: a create whose answer was lost looks the
name up, adopts the server when it carries the requested labels, and only then
creates again (a second create of the same name fails with uniqueness_error,
which again leads to the lookup). ``delete_server`` treats "not found" on a
retry as done, since the first attempt deleted the server.

One instance may serve several threads: httpx.Client is thread-safe, and the
remembered rate-limit budget is only advice for the next request.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Generator, Mapping
from typing import Any

import httpx

from bcfleet.clock import Clock, SystemClock, parse_time
from bcfleet.egress import EgressGuard
from bcfleet.errors import (
    ConflictError,
    FleetError,
    InvalidInputError,
    NotFoundError,
    ProviderUnavailableError,
    UnauthenticatedError,
)
from bcfleet.providers.base import Offer, ProviderServer, filter_offers
from bcfleet.providers.errors import translate_action_error, unexpected_answer
from bcfleet.providers.hetzner_offers import offers_of
from bcfleet.providers.paging import next_page
from bcfleet.providers.retrying import AmbiguousOutcome, JsonApi, RetryPolicy
from bcfleet.secretbox import Secret

DEFAULT_BASE_URL = "https://api.hetzner.cloud/v1"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
PROVIDER = "hetzner"
MAX_PAGES = 1000


class EnvBearerAuth(httpx.Auth):
    """Bearer auth whose token is read from an environment variable at each request."""

    def __init__(self, token_env: str, environ: Mapping[str, str] | None = None) -> None:
        self.token_env = token_env
        self._environ = environ

    def __repr__(self) -> str:
        return f"EnvBearerAuth(token_env={self.token_env!r})"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        environ = os.environ if self._environ is None else self._environ
        token = environ.get(self.token_env, "").strip()
        if not token:
            raise UnauthenticatedError(
                f"the environment variable {self.token_env} holding the provider token is not set",
                {"provider": PROVIDER, "tokenEnv": self.token_env},
            )
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class SecretBearerAuth(httpx.Auth):
    """Bearer auth with a token given as a Secret (a tenant's own, unsealed for this client)."""

    def __init__(self, token: Secret) -> None:
        self._token = token

    def __repr__(self) -> str:
        return "SecretBearerAuth(token='********')"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token.reveal()}"
        yield request


def bearer_auth(
    token_env: str | None, token: Secret | None, environ: Mapping[str, str] | None
) -> httpx.Auth:
    """The auth of a client: exactly one of a token variable's name and a token."""
    if token is not None and not token_env:
        return SecretBearerAuth(token)
    if token_env and token is None:
        return EnvBearerAuth(token_env, environ)
    raise InvalidInputError(
        "a provider client needs either tokenEnv or a token", {"provider": PROVIDER}
    )


class ActionFailed(Exception):
    """An action ended with status ``error``; ``error`` is its translation."""

    def __init__(self, error: FleetError) -> None:
        super().__init__(error.message)
        self.error = error


class HetznerProvider:
    """The Hetzner Cloud API as a ProviderImpl."""

    def __init__(
        self,
        *,
        token_env: str | None = None,
        token: Secret | None = None,
        egress: EgressGuard | None = None,
        base_url: str = DEFAULT_BASE_URL,
        environ: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None,
        page_size: int = 50,
        currency: str = "EUR",
    ) -> None:
        self.token_env = token_env
        self.base_url = base_url.rstrip("/")
        self._clock = clock or SystemClock()
        self._page_size = page_size
        self._currency = currency
        self._policy = retry or RetryPolicy()
        self._rng = rng or random.Random()
        if transport is None and egress is not None:
            transport = egress.transport()
        self._client = httpx.Client(
            base_url=self.base_url + "/",
            auth=bearer_auth(token_env, token, environ),
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": "bcfleet"},
            follow_redirects=False,
        )
        self._api = JsonApi(
            self._client,
            provider=PROVIDER,
            policy=self._policy,
            clock=self._clock,
            rng=self._rng,
        )

    def __repr__(self) -> str:
        source = f"token_env={self.token_env!r}" if self.token_env else "token='********'"
        return f"HetznerProvider(base_url={self.base_url!r}, {source})"

    def __enter__(self) -> HetznerProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def offers(self, kind: str | None = None, min_vcpu: int | None = None) -> list[Offer]:
        """Every (server type, location) offer, filtered by kind and minimum vCPUs."""
        server_types = self._get_all("server_types", "server_types")
        now = self._clock.now()
        try:
            offers = [
                offer
                for server_type in server_types
                for offer in offers_of(server_type, now, self._currency)
            ]
        except (KeyError, TypeError, ValueError, AttributeError, InvalidInputError) as exc:
            raise unexpected_answer(PROVIDER, "server_types") from exc
        return filter_offers(offers, kind, min_vcpu)

    def create_server(
        self,
        name: str,
        offer_id: str,
        image: str,
        location: str,
        labels: Mapping[str, str],
    ) -> ProviderServer:
        """Create the server, or adopt the one an earlier lost answer created under this name."""
        body = {
            "name": name,
            "server_type": offer_id,
            "image": image,
            "location": location,
            "labels": dict(labels),
            "start_after_create": True,
        }
        context = {"name": name, "offerId": offer_id, "region": location}
        lost: AmbiguousOutcome | None = None
        for attempt in range(self._policy.max_attempts):
            try:
                payload = self._api.call(
                    "POST", "servers", body=body, idempotent=False, context=context
                )
                return self._finish_create(payload, context)
            except AmbiguousOutcome as exc:
                lost = exc
            except ConflictError as exc:
                if lost is None or exc.details.get("providerCode") != "uniqueness_error":
                    raise
            adopted = self._adopt(name, labels, lost.reason)
            if adopted is not None:
                return adopted
            self._clock.sleep(self._policy.backoff(attempt, self._rng))
        raise _unknown_outcome(name, lost.reason if lost else "timeout")

    def delete_server(self, server_id: str) -> None:
        """Delete the server and wait for its action; NOT_FOUND if it was not there."""
        path = f"servers/{_numeric_id(server_id)}"
        context = {"serverId": server_id}
        try:
            payload = self._api.call("DELETE", path, context=context)
        except NotFoundError as exc:
            if exc.details.get("attempts", 1) > 1:
                return  # a lost answer: the first attempt deleted it
            raise
        try:
            self._wait_for_action(payload.get("action"), context)
        except ActionFailed as failed:
            raise failed.error from None

    def _finish_create(self, payload: dict[str, Any], context: dict[str, Any]) -> ProviderServer:
        """Wait for the create action; the server as it is then (deleted again if it failed)."""
        server = _server_of(payload.get("server"))
        try:
            self._wait_for_action(payload.get("action"), dict(context, serverId=server.id))
        except ActionFailed as failed:
            self._discard(server.id)
            raise failed.error from None
        return self.get_server(server.id) or server

    def _discard(self, server_id: str) -> None:
        """Best effort: delete a server whose create action failed (the next pass sees leftovers)."""
        with contextlib.suppress(FleetError):
            self._api.call("DELETE", f"servers/{server_id}", context={"serverId": server_id})

    def get_server(self, server_id: str) -> ProviderServer | None:
        """The server with this id, or None when it is gone."""
        path = f"servers/{_numeric_id(server_id)}"
        try:
            payload = self._api.call("GET", path, context={"serverId": server_id})
        except NotFoundError:
            return None
        return _server_of(payload.get("server"))

    def _wait_for_action(self, action: Any, context: dict[str, Any]) -> None:
        """Poll GET /actions/{id} until the action ends; its error translated if it failed."""
        if not isinstance(action, dict) or not isinstance(action.get("id"), int):
            raise unexpected_answer(PROVIDER, "action")
        waited = 0.0
        while True:
            status = action.get("status")
            if status == "success":
                return
            if status == "error":
                raise ActionFailed(translate_action_error(PROVIDER, action, context))
            if status != "running":
                raise unexpected_answer(PROVIDER, "action")
            if waited >= self._policy.action_timeout:
                raise _action_timeout(action, context)
            self._clock.sleep(self._policy.action_poll_interval)
            waited += self._policy.action_poll_interval
            payload = self._api.call("GET", f"actions/{action['id']}", context=context)
            action = payload.get("action")
            if not isinstance(action, dict):
                raise unexpected_answer(PROVIDER, "action")

    def list_servers(self, label_selector: Mapping[str, str]) -> list[ProviderServer]:
        """The servers carrying every given label (all servers for an empty selector)."""
        params = {"label_selector": label_selector_text(label_selector)} if label_selector else {}
        return [_server_of(raw) for raw in self._get_all("servers", "servers", params)]

    def get_server_by_name(self, name: str) -> ProviderServer | None:
        """The server with this exact name, or None."""
        if not name:
            raise InvalidInputError("a server name is required", {"provider": PROVIDER})
        payload = self._api.call("GET", "servers", params={"name": name})
        servers = [
            raw
            for raw in payload.get("servers") or []
            if isinstance(raw, dict) and raw.get("name") == name
        ]
        return _server_of(servers[0]) if servers else None

    def _adopt(self, name: str, labels: Mapping[str, str], reason: str) -> ProviderServer | None:
        """The server a lost create made, if it is there and carries our labels."""
        try:
            found = self.get_server_by_name(name)
        except ProviderUnavailableError as exc:
            raise _unknown_outcome(name, reason) from exc
        if found is None:
            return None
        if any(found.labels.get(key) != value for key, value in labels.items()):
            raise ConflictError(
                f"{PROVIDER}: a server named {name!r} exists without the requested labels",
                {"provider": PROVIDER, "providerCode": "uniqueness_error", "name": name},
            )
        return found

    def _get_all(
        self, path: str, key: str, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every item of a paginated list, page after page (paging.next_page decides)."""
        items: list[dict[str, Any]] = []
        page: int | None = 1
        for _ in range(MAX_PAGES):
            if page is None:
                return items
            query = dict(params or {}, page=page, per_page=self._page_size)
            response = self._api.send("GET", path, params=query)
            payload = _json_object(response)
            found = payload.get(key)
            if not isinstance(found, list):
                raise unexpected_answer(PROVIDER, key)
            items.extend(found)
            page = next_page(payload, response.links.get("next", {}).get("url"), page)
        raise ProviderUnavailableError(
            f"{PROVIDER}: {path} has more than {MAX_PAGES} pages",
            {"provider": PROVIDER, "providerCode": "pagination", "retryable": False},
        )


def label_selector_text(labels: Mapping[str, str]) -> str:
    """``{"a": "1", "b": "2"}`` → ``a=1,b=2``; INVALID_INPUT for characters it cannot hold."""
    parts = []
    for key, value in sorted(labels.items()):
        if not key or any(ch in f"{key}{value}" for ch in ",=! ()"):
            raise InvalidInputError(
                f"label {key!r}={value!r} cannot be used in a label selector",
                {"provider": PROVIDER, "label": key},
            )
        parts.append(f"{key}={value}")
    return ",".join(parts)


def _unknown_outcome(name: str, reason: str) -> ProviderUnavailableError:
    return ProviderUnavailableError(
        f"{PROVIDER}: creating server {name!r} may or may not have succeeded ({reason}); "
        "look it up by name before creating it again",
        {
            "provider": PROVIDER,
            "providerCode": reason,
            "name": name,
            "outcome": "unknown",
            "retryable": True,
        },
    )


def _numeric_id(server_id: str) -> str:
    text = str(server_id).strip()
    if not text.isdigit():
        raise InvalidInputError(
            f"{PROVIDER} server ids are numbers, got {server_id!r}",
            {"provider": PROVIDER, "serverId": server_id},
        )
    return text


def _server_of(raw: Any) -> ProviderServer:
    """A server from the provider's JSON; PROVIDER_UNAVAILABLE when the answer is not one."""
    try:
        return _server_fields(raw)
    except (KeyError, TypeError, ValueError, AttributeError, InvalidInputError) as exc:
        raise unexpected_answer(PROVIDER, "server") from exc


def _server_fields(raw: dict[str, Any]) -> ProviderServer:
    location = raw.get("location") or {}
    return ProviderServer(
        id=str(raw["id"]),
        name=str(raw["name"]),
        status=str(raw.get("status", "unknown")),
        offer_id=str((raw.get("server_type") or {}).get("name", "")),
        labels=dict(raw.get("labels") or {}),
        created=parse_time(str(raw["created"])),
        region=location.get("name"),
    )


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        payload = response.json()
    except ValueError as exc:
        raise unexpected_answer(PROVIDER, "a list") from exc
    if not isinstance(payload, dict):
        raise unexpected_answer(PROVIDER, "a list")
    return payload


def _action_timeout(action: dict[str, Any], context: dict[str, Any]) -> ProviderUnavailableError:
    command = action.get("command")
    return ProviderUnavailableError(
        f"{PROVIDER}: action {command} ({action.get('id')}) was still running when bcfleet "
        "stopped waiting; the next pass sees how it ended",
        {
            "provider": PROVIDER,
            "providerCode": "action_timeout",
            "action": command,
            "actionId": action.get("id"),
            "outcome": "unknown",
            "retryable": True,
            **context,
        },
    )
