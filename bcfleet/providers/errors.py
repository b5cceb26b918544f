"""Translate provider API errors into the FleetError tree; the Hetzner client raises only these.

Every translated error carries ``details.provider`` and ``details.providerCode``
(the provider's own error code, or ``timeout``/``connect_error`` for the
network), and ``details.retryable`` saying whether the same call may succeed
later unchanged. Hetzner codes map as follows:

    resource_unavailable, placement_error,
    no_space_left_in_location,
    resource_limit_exceeded              → CapacityUnavailableError; details.resource is the
                                           offer id, or ``accountLimit`` when the provider
                                           project's own limit is reached
    uniqueness_error, locked, conflict,
    protected                            → ConflictError
    rate_limit_exceeded (after retries)  → ProviderRateLimitedError (CONFLICT, retryable,
                                           details.retryAfterSeconds)
    invalid_input, json_error            → InvalidInputError
    not_found                            → NotFoundError
    unauthorized                         → UnauthenticatedError
    forbidden, token_readonly            → ForbiddenError
    unsupported_error                    → UnsupportedError
    server_error, service_error, unavailable, maintenance, timeout,
    network failures and timeouts        → ProviderUnavailableError
    any other code, or an answer that is
    not the provider's JSON              → ProviderUnavailableError (not retryable): a
                                           provider's failure is never an internal error

Rate limiting keeps the stable CONFLICT code (like Hetzner's own ``conflict``:
"try again"); it is not LOCKED, which names a bcfleet lock holder. A provider
that cannot be reached has no code in PRODUCT.md §3, so ProviderUnavailableError
adds ``PROVIDER_UNAVAILABLE`` (HTTP 503) as a subclass of FleetError.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    UnauthenticatedError,
    UnsupportedError,
)


class ProviderRateLimitedError(ConflictError):
    """The provider kept answering 429 after every allowed retry; try again after the reset."""


class ProviderUnavailableError(FleetError):
    """The provider did not answer usefully: network failure, timeout or a 5xx after retries."""

    code: ClassVar[str] = "PROVIDER_UNAVAILABLE"
    http_status: ClassVar[int] = 503


_CAPACITY = {
    "resource_unavailable",
    "placement_error",
    "no_space_left_in_location",
    "resource_limit_exceeded",
}
_CONFLICT = {"uniqueness_error", "locked", "conflict", "protected", "resource_locked"}
_INVALID = {"invalid_input", "json_error"}
_FORBIDDEN = {"forbidden", "token_readonly"}
_UNAVAILABLE = {
    "server_error",
    "service_error",
    "unavailable",
    "maintenance",
    "timeout",
    "robot_unavailable",
}

# Codes whose request the provider did not apply, so any request may be sent again.
REJECTED_RETRYABLE = frozenset({"rate_limit_exceeded", "conflict", "locked"})
# Codes where the provider failed on its side; whether it applied the request is unknown.
SERVER_FAULTS = frozenset(_UNAVAILABLE)

_BY_STATUS = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    412: "resource_unavailable",
    422: "unsupported_error",
    423: "locked",
    429: "rate_limit_exceeded",
}


def code_for_status(status: int) -> str:
    """The Hetzner code a bare HTTP status stands for, when the body carries none."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return "server_error" if status >= 500 else "unknown_error"


def translate(
    provider: str,
    status: int,
    code: str,
    message: str,
    context: dict[str, Any] | None = None,
) -> FleetError:
    """The FleetError for one provider error answer; ``context`` adds call details."""
    details: dict[str, Any] = {"provider": provider, "providerCode": code, "providerStatus": status}
    details.update(context or {})
    text = f"{provider}: {message} ({code})"
    if code in _CAPACITY:
        limit = code == "resource_limit_exceeded"
        details.setdefault("resource", "accountLimit" if limit else details.get("offerId"))
        details["retryable"] = not limit
        return CapacityUnavailableError(text, details)
    if code == "rate_limit_exceeded":
        details["retryable"] = True
        return ProviderRateLimitedError(text, details)
    if code in _CONFLICT:
        details["retryable"] = code in REJECTED_RETRYABLE
        return ConflictError(text, details)
    details["retryable"] = code in _UNAVAILABLE
    return _plain(code, status, text, details)


def _plain(code: str, status: int, text: str, details: dict[str, Any]) -> FleetError:
    if code in _INVALID:
        return InvalidInputError(text, details)
    if code == "not_found":
        return NotFoundError(text, details)
    if code == "unauthorized":
        return UnauthenticatedError(text, details)
    if code in _FORBIDDEN:
        return ForbiddenError(text, details)
    if code == "unsupported_error":
        return UnsupportedError(text, details)
    if code in _UNAVAILABLE or status >= 500:
        details["retryable"] = True
    return ProviderUnavailableError(text, details)


def unexpected_answer(provider: str, what: str) -> ProviderUnavailableError:
    """PROVIDER_UNAVAILABLE for an answer that is not the provider API's JSON (no content quoted)."""
    return ProviderUnavailableError(
        f"{provider}: the provider's answer about {what} is not what its API sends",
        {"provider": provider, "providerCode": "unexpected_answer", "retryable": False},
    )


def refused_destination(provider: str) -> ProviderUnavailableError:
    """PROVIDER_UNAVAILABLE for an endpoint the egress guard refused (no address named)."""
    return ProviderUnavailableError(
        f"{provider}: the provider's endpoint is not an allowed destination",
        {"provider": provider, "providerCode": "egress_refused", "retryable": False},
    )
