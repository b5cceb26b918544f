"""A retrying, rate-limit-aware JSON client over httpx; provider clients send every request here.

Retries follow one rule: send a request again only when that cannot apply it
twice. Idempotent requests (GET, DELETE) are retried after network failures,
5xx answers and the "not applied, try again" codes (``rate_limit_exceeded``,
``conflict``, ``locked``). A non-idempotent request (POST) is retried only when
it certainly was not applied: the connection was never made, or the provider
refused it with one of those codes. When it may have been applied (a read
timeout, a dropped connection, a 5xx) :class:`AmbiguousOutcome` goes to the
caller, which must look the object up by its unique name before trying again.

Waits are capped, jittered exponential backoff, except for the rate limit
Hetzner documents: the project's budget of ``RateLimit-Limit`` requests refills
gradually (one a second at 3600 an hour) and ``RateLimit-Reset`` is the UNIX
time at which it is full again. After an answer saying ``RateLimit-Remaining:
0`` the next request waits until one request is regained
(:func:`seconds_until_one_request`); a 429 waits until ``RateLimit-Reset``.
No wait is longer than ``max_rate_limit_wait``. Time and randomness come from
an injected Clock and ``random.Random``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import httpx

from bcfleet.clock import Clock
from bcfleet.egress import EgressRefused
from bcfleet.errors import FleetError, ProviderUnavailableError
from bcfleet.providers.errors import (
    REJECTED_RETRYABLE,
    SERVER_FAULTS,
    code_for_status,
    refused_destination,
    translate,
)

# Exceptions after which the request certainly never reached the provider.
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry: attempts include the first one.

    ``action_poll_interval`` and ``action_timeout`` say how often and how long a
    client polls an action the provider started (a server being made or deleted).
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_rate_limit_wait: float = 60.0
    action_poll_interval: float = 1.0
    action_timeout: float = 300.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Equal-jitter exponential backoff for the given 0-based attempt, capped at max_delay."""
        ceiling = min(self.max_delay, self.base_delay * (2.0**attempt))
        return ceiling / 2 + rng.uniform(0.0, ceiling / 2)


class AmbiguousOutcome(Exception):
    """A non-idempotent request may or may not have been applied by the provider."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass
class _Attempt:
    method: str
    path: str
    number: int
    last: bool


class JsonApi:
    """Sends JSON requests to one provider API with retries, rate limiting and error translation."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        provider: str,
        policy: RetryPolicy,
        clock: Clock,
        rng: random.Random,
    ) -> None:
        self._client = client
        self._provider = provider
        self._policy = policy
        self._clock = clock
        self._rng = rng
        self._limit: float | None = None
        self._remaining: int | None = None
        self._reset_at: float | None = None

    def __repr__(self) -> str:
        return f"JsonApi(provider={self._provider!r}, base_url={str(self._client.base_url)!r})"

    def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        idempotent: bool = True,
        context: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The decoded JSON answer; FleetError on failure, AmbiguousOutcome as described above."""
        response = self.send(
            method, path, params=params, body=body, idempotent=idempotent, context=context
        )
        return _json_of(response)

    def send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        idempotent: bool = True,
        context: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """The successful answer itself (headers such as ``Link`` included); errors as call()."""
        attempts = self._policy.max_attempts
        for number in range(attempts):
            step = _Attempt(method, path, number, number == attempts - 1)
            self._wait_for_budget()
            try:
                response = self._client.request(method, path, params=params, json=body)
            except EgressRefused as exc:  # refused before connecting: never sent, never retried
                raise refused_destination(self._provider) from exc
            except httpx.TransportError as exc:
                self._after_transport_error(exc, step, idempotent)
                continue
            except httpx.HTTPError as exc:  # a body that cannot be decoded, …
                raise ProviderUnavailableError(
                    f"{self._provider}: the answer to {method} {path} could not be read",
                    {"provider": self._provider, "providerCode": "bad_answer", "retryable": True},
                ) from exc
            self._remember_budget(response)
            if response.is_success:
                return response
            self._after_error_answer(response, step, idempotent, context)
        raise AssertionError("unreachable: the last attempt always returns or raises")

    def _after_transport_error(self, exc: httpx.TransportError, step: _Attempt, idem: bool) -> None:
        if not idem and not isinstance(exc, _NEVER_SENT):
            raise AmbiguousOutcome(_network_code(exc)) from exc
        if step.last:
            raise self._unreachable(exc, step) from exc
        self._clock.sleep(self._policy.backoff(step.number, self._rng))

    def _after_error_answer(
        self,
        response: httpx.Response,
        step: _Attempt,
        idempotent: bool,
        context: dict[str, Any] | None,
    ) -> None:
        code, message = _error_of(response)
        if not step.last and code in REJECTED_RETRYABLE:
            self._clock.sleep(self._delay_after_refusal(code, response, step.number))
            self._remaining = None  # that wait already honoured the reset
            return
        if code in SERVER_FAULTS or response.status_code >= 500:
            if not idempotent:
                raise AmbiguousOutcome(code, response.status_code)
            if not step.last:
                self._clock.sleep(self._policy.backoff(step.number, self._rng))
                return
        raise self._translated(response, code, message, step, context)

    def _translated(
        self,
        response: httpx.Response,
        code: str,
        message: str,
        step: _Attempt,
        context: dict[str, Any] | None,
    ) -> FleetError:
        extra = dict(context or {})
        extra["attempts"] = step.number + 1
        if code == "rate_limit_exceeded":
            extra["retryAfterSeconds"] = self._seconds_until_reset(response)
        return translate(self._provider, response.status_code, code, message, extra)

    def _unreachable(self, exc: httpx.TransportError, step: _Attempt) -> FleetError:
        code = _network_code(exc)
        return ProviderUnavailableError(
            f"{self._provider}: no answer to {step.method} {step.path} after "
            f"{step.number + 1} attempts ({code})",
            {
                "provider": self._provider,
                "providerCode": code,
                "attempts": step.number + 1,
                "retryable": True,
            },
        )

    def _delay_after_refusal(self, code: str, response: httpx.Response, number: int) -> float:
        if code == "rate_limit_exceeded":
            wait = self._seconds_until_reset(response)
            if wait is not None and wait > 0:
                jitter = self._rng.uniform(0.0, self._policy.base_delay)
                return min(wait + jitter, self._policy.max_rate_limit_wait)
        return self._policy.backoff(number, self._rng)

    def _seconds_until_reset(self, response: httpx.Response) -> float | None:
        reset = _number_header(response, "RateLimit-Reset")
        if reset is not None:
            return max(0.0, reset - self._clock.now().timestamp())
        return _number_header(response, "Retry-After")

    def _remember_budget(self, response: httpx.Response) -> None:
        remaining = _number_header(response, "RateLimit-Remaining")
        self._remaining = None if remaining is None else int(remaining)
        self._limit = _number_header(response, "RateLimit-Limit")
        self._reset_at = _number_header(response, "RateLimit-Reset")

    def _wait_for_budget(self) -> None:
        """Before sending: if the last answer said no requests remain, wait until one is regained."""
        if self._remaining is None or self._reset_at is None:
            return
        wait = seconds_until_one_request(
            self._limit, self._remaining, self._reset_at, self._clock.now().timestamp()
        )
        if wait > 0:
            self._remaining = None
            self._clock.sleep(min(wait, self._policy.max_rate_limit_wait))


def seconds_until_one_request(
    limit: float | None, remaining: int, reset_at: float, now: float
) -> float:
    """How long until the budget holds one request again (0 while any remain).

    The budget refills evenly from ``remaining`` to ``limit`` by ``reset_at``, so
    one request comes back every ``(reset_at - now) / (limit - remaining)``
    seconds: 1 s at 3600 an hour. Without ``RateLimit-Limit`` the reset itself.
    """
    if remaining > 0:
        return 0.0
    until_full = max(0.0, reset_at - now)
    if limit is None or limit <= remaining:
        return until_full
    return until_full / (limit - remaining)


def _json_of(response: httpx.Response) -> dict[str, Any]:
    if not response.content:
        return {}
    try:
        payload = response.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _error_of(response: httpx.Response) -> tuple[str, str]:
    """The provider's error code and message, or ones derived from the status."""
    error = _json_of(response).get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return error["code"], str(error.get("message") or error["code"])
    return code_for_status(response.status_code), response.reason_phrase or "error"


def _number_header(response: httpx.Response, name: str) -> float | None:
    raw = response.headers.get(name)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def _network_code(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect_error"
    return "network_error"
