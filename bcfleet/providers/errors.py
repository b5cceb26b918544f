"""Translate provider API errors into the FleetError tree; the Hetzner client raises only these.

Every translated error carries ``details.provider`` and ``details.providerCode``
(the provider's own error code, or ``timeout``/``connect_error`` for the
network), ``details.providerMessage`` (the provider's own words), and
``details.retryable`` saying whether the same call may succeed later
unchanged. The message names the provider's code and message. Every code
Hetzner documents has one row in :data:`CODES`:

    resource_unavailable, placement_error,
    no_space_left_in_location,
    resource_limit_exceeded, ip_not_available,
    no_subnet_available                  → CapacityUnavailableError; details.resource is the
                                           offer id, or ``accountLimit`` when the provider
                                           project's own limit is reached
    uniqueness_error, locked, conflict,
    protected, server_not_stopped, …     → ConflictError
    rate_limit_exceeded (after retries)  → ProviderRateLimitedError (CONFLICT, retryable,
                                           details.retryAfterSeconds)
    invalid_input, json_error, …         → InvalidInputError
    not_found                            → NotFoundError
    unauthorized                         → UnauthenticatedError
    forbidden, token_readonly            → ForbiddenError
    unsupported_error                    → UnsupportedError
    deprecated_api_endpoint,
    method_not_allowed                   → ProviderIncompatibleError (PROVIDER_UNAVAILABLE, not
                                           retryable: the provider removed what bcfleet calls)
    server_error, service_error, unavailable, maintenance, timeout, bad_gateway,
    network failures and timeouts        → ProviderUnavailableError (retryable)
    any other code, or an answer that is
    not the provider's JSON              → ProviderUnavailableError (not retryable): a
                                           provider's failure is never an internal error

A failed action (``GET /actions/{id}`` with status ``error``) is translated by
the same table from the action's error code (:func:`translate_action_error`).

Rate limiting keeps the stable CONFLICT code (like Hetzner's own ``conflict``:
"try again"); it is not LOCKED, which names a bcfleet lock holder. A provider
that cannot be reached has no code in PRODUCT.md §3, so the tree in
bcfleet/errors.py adds ``PROVIDER_UNAVAILABLE`` (HTTP 503); every class this
table names lives there, so the HTTP client decodes each of them.
"""

from __future__ import annotations

from typing import Any

from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    ProviderIncompatibleError,
    ProviderRateLimitedError,
    ProviderUnavailableError,
    UnauthenticatedError,
    UnsupportedError,
)

_CAPACITY = "capacity"
_RATE = "rate"
_CONFLICT = "conflict"
_INVALID = "invalid"
_NOT_FOUND = "not_found"
_UNAUTHENTICATED = "unauthenticated"
_FORBIDDEN = "forbidden"
_UNSUPPORTED = "unsupported"
_INCOMPATIBLE = "incompatible"
_UNAVAILABLE = "unavailable"

# Hetzner's documented error codes (general and per endpoint): code → (kind, retryable).
CODES: dict[str, tuple[str, bool]] = {
    "resource_unavailable": (_CAPACITY, True),
    "placement_error": (_CAPACITY, True),
    "no_space_left_in_location": (_CAPACITY, True),
    "ip_not_available": (_CAPACITY, True),
    "no_subnet_available": (_CAPACITY, False),
    "resource_limit_exceeded": (_CAPACITY, False),
    "rate_limit_exceeded": (_RATE, True),
    "conflict": (_CONFLICT, True),
    "locked": (_CONFLICT, True),
    "resource_locked": (_CONFLICT, True),
    "uniqueness_error": (_CONFLICT, False),
    "protected": (_CONFLICT, False),
    "server_not_stopped": (_CONFLICT, False),
    "primary_ip_assigned": (_CONFLICT, False),
    "server_already_attached": (_CONFLICT, False),
    "server_already_added": (_CONFLICT, False),
    "firewall_already_applied": (_CONFLICT, False),
    "firewall_already_removed": (_CONFLICT, False),
    "invalid_input": (_INVALID, False),
    "json_error": (_INVALID, False),
    "invalid_server_type": (_INVALID, False),
    "primary_ip_version_mismatch": (_INVALID, False),
    "primary_ip_location_mismatch": (_INVALID, False),
    "primary_ip_datacenter_mismatch": (_INVALID, False),
    "networks_overlap": (_INVALID, False),
    "incompatible_network_type": (_INVALID, False),
    "cloud_resource_ip_not_allowed": (_INVALID, False),
    "ip_not_owned": (_INVALID, False),
    "not_found": (_NOT_FOUND, False),
    "unauthorized": (_UNAUTHENTICATED, False),
    "forbidden": (_FORBIDDEN, False),
    "token_readonly": (_FORBIDDEN, False),
    "unsupported_error": (_UNSUPPORTED, False),
    "deprecated_api_endpoint": (_INCOMPATIBLE, False),
    "method_not_allowed": (_INCOMPATIBLE, False),
    "server_error": (_UNAVAILABLE, True),
    "service_error": (_UNAVAILABLE, True),
    "unavailable": (_UNAVAILABLE, True),
    "maintenance": (_UNAVAILABLE, True),
    "timeout": (_UNAVAILABLE, True),
    "bad_gateway": (_UNAVAILABLE, True),
    "robot_unavailable": (_UNAVAILABLE, True),
    "action_failed": (_UNAVAILABLE, True),
}

# Codes whose request the provider did not apply, so any request may be sent again.
REJECTED_RETRYABLE = frozenset({"rate_limit_exceeded", "conflict", "locked", "resource_locked"})
# Codes where the provider failed on its side; whether it applied the request is unknown.
SERVER_FAULTS = frozenset(code for code, (kind, _) in CODES.items() if kind == _UNAVAILABLE)

_BY_STATUS = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    410: "deprecated_api_endpoint",
    412: "resource_unavailable",
    422: "unsupported_error",
    423: "locked",
    429: "rate_limit_exceeded",
    502: "bad_gateway",
    503: "unavailable",
    504: "timeout",
}

_CLASSES: dict[str, type[FleetError]] = {
    _CAPACITY: CapacityUnavailableError,
    _RATE: ProviderRateLimitedError,
    _CONFLICT: ConflictError,
    _INVALID: InvalidInputError,
    _NOT_FOUND: NotFoundError,
    _UNAUTHENTICATED: UnauthenticatedError,
    _FORBIDDEN: ForbiddenError,
    _UNSUPPORTED: UnsupportedError,
    _INCOMPATIBLE: ProviderIncompatibleError,
    _UNAVAILABLE: ProviderUnavailableError,
}


def code_for_status(status: int) -> str:
    """The Hetzner code a bare HTTP status stands for, when the body carries none."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return "server_error" if status >= 500 else "unknown_error"


def translate(
    provider: str,
    status: int | None,
    code: str,
    message: str,
    context: dict[str, Any] | None = None,
) -> FleetError:
    """The FleetError for one provider error answer; ``context`` adds call details."""
    details: dict[str, Any] = {"provider": provider, "providerCode": code}
    if status is not None:
        details["providerStatus"] = status
    details["providerMessage"] = message
    details.update(context or {})
    kind, retryable = CODES.get(code, (_UNAVAILABLE, status is not None and status >= 500))
    if kind == _CAPACITY:
        limit = code in {"resource_limit_exceeded", "no_subnet_available"}
        details.setdefault("resource", "accountLimit" if limit else details.get("offerId"))
    details["retryable"] = retryable
    return _CLASSES[kind](f"{provider}: {message} ({code})", details)


def translate_action_error(
    provider: str, action: dict[str, Any], context: dict[str, Any] | None = None
) -> FleetError:
    """The FleetError for an action that ended with status ``error`` (its error code decides)."""
    raw = action.get("error")
    error: dict[str, Any] = raw if isinstance(raw, dict) else {}
    code = str(error.get("code") or "action_failed")
    message = str(error.get("message") or f"action {action.get('command')} failed")
    extra = {"action": action.get("command"), "actionId": action.get("id")}
    extra.update(context or {})
    return translate(provider, None, code, message, extra)


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
