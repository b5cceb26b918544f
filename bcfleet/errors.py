"""The one exception tree of bcfleet; every layer raises these and every edge renders them.

    FleetError                      (code, HTTP status, details)
    ├── InvalidInputError           INVALID_INPUT           400
    ├── UnauthenticatedError        UNAUTHENTICATED         401
    ├── ForbiddenError              FORBIDDEN               403
    ├── NotFoundError               NOT_FOUND               404
    ├── ConflictError               CONFLICT                409
    │   ├── QuotaExceededError      QUOTA_EXCEEDED          409
    │   ├── CapacityUnavailableError CAPACITY_UNAVAILABLE   409
    │   ├── SizeInUseError          SIZE_IN_USE             409
    │   └── StalePlanError          STALE_PLAN              409
    ├── UnsupportedError            UNSUPPORTED             422
    ├── LockedError                 LOCKED                  423
    ├── TooManyRequestsError        TOO_MANY_REQUESTS       429   (a tenant's long-lived requests
    │                                                             are at their bound; Retry-After)
    ├── SchemaMismatchError         SCHEMA_MISMATCH         500   (the tables are not those of
    │                                                             the database's revision)
    ├── NoCapacityError             NO_CAPACITY             503
    ├── DatabaseUnavailableError    DATABASE_UNAVAILABLE    503   (the database connection was
    │                               lost or could not be made, or it cancelled a statement;
    │                               Retry-After; details say whether the change may have been
    │                               saved)
    └── ProviderUnavailableError    PROVIDER_UNAVAILABLE    503   (a cloud provider could not be
        └── ProviderIncompatibleError                             reached after retries, or removed
                                                                  what bcfleet calls)

    ConflictError also has ProviderRateLimitedError (CONFLICT): a provider's rate limit
    outlasted the retries. bcfleet/providers/errors.py maps each code a provider documents onto
    these classes.

Codes are stable: scripts and tests match on them, never on messages.
Messages never name another tenant's objects.
"""

from __future__ import annotations

from typing import Any, ClassVar


class FleetError(Exception):
    """Base of every error bcfleet raises on purpose."""

    code: ClassVar[str] = "INTERNAL"
    http_status: ClassVar[int] = 500
    # Seconds a client should wait before trying again (HTTP Retry-After); None: no advice.
    retry_after_seconds: int | None = None

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        """The error document of PRODUCT.md §3."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, details={self.details!r})"


class InvalidInputError(FleetError):
    code = "INVALID_INPUT"
    http_status = 400


class UnauthenticatedError(FleetError):
    code = "UNAUTHENTICATED"
    http_status = 401


class ForbiddenError(FleetError):
    code = "FORBIDDEN"
    http_status = 403


class NotFoundError(FleetError):
    code = "NOT_FOUND"
    http_status = 404


class ConflictError(FleetError):
    code = "CONFLICT"
    http_status = 409


class QuotaExceededError(ConflictError):
    code = "QUOTA_EXCEEDED"


class CapacityUnavailableError(ConflictError):
    code = "CAPACITY_UNAVAILABLE"


class SizeInUseError(ConflictError):
    code = "SIZE_IN_USE"


class StalePlanError(ConflictError):
    code = "STALE_PLAN"


class UnsupportedError(FleetError):
    code = "UNSUPPORTED"
    http_status = 422


class LockedError(FleetError):
    code = "LOCKED"
    http_status = 423


class TooManyRequestsError(FleetError):
    """A bound on concurrent requests was reached: HTTP 429 with Retry-After."""

    code = "TOO_MANY_REQUESTS"
    http_status = 429

    def __init__(
        self,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after_seconds: int | None = None,
    ) -> None:
        merged = dict(details or {})
        if retry_after_seconds is not None:
            merged["retryAfterSeconds"] = retry_after_seconds
        super().__init__(message, merged)
        retry = merged.get("retryAfterSeconds")
        self.retry_after_seconds: int | None = retry if isinstance(retry, int) else None


class NoCapacityError(FleetError):
    """No free instance of a size: HTTP 503 with reason fleet_no_capacity (document 004)."""

    code = "NO_CAPACITY"
    http_status = 503

    def __init__(
        self,
        message: str,
        *,
        instance_size: str,
        retry_after_seconds: int | None,
        details: dict[str, Any] | None = None,
    ) -> None:
        merged: dict[str, Any] = {"reason": "fleet_no_capacity", "instance_size": instance_size}
        if retry_after_seconds is not None:
            merged["retry_after"] = retry_after_seconds
        merged.update(details or {})
        super().__init__(message, merged)
        self.instance_size = instance_size
        self.retry_after_seconds = retry_after_seconds


class SchemaMismatchError(FleetError):
    """The database's tables are not those of the revision it is stamped with (`fleet db
    upgrade` compares them after migrating): details.revision and details.differences."""

    code = "SCHEMA_MISMATCH"
    http_status = 500


class DatabaseUnavailableError(FleetError):
    """The database connection was lost (or could not be made) and the call could not finish.

    details.reason is ``connection_lost`` when the transaction was rolled back with nothing
    saved (the call was already run a second time), ``statement_cancelled`` when the database
    cancelled a statement (statement_timeout, pg_cancel_backend) and nothing was saved,
    ``commit_outcome_unknown`` when the connection died (or the statement was cancelled) while
    COMMIT was on its way: the change may or may not have been saved, so look before sending
    it again.
    """

    code = "DATABASE_UNAVAILABLE"
    http_status = 503

    def __init__(
        self,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after_seconds: int | None = 1,
    ) -> None:
        super().__init__(message, details)
        self.retry_after_seconds = retry_after_seconds


class ProviderRateLimitedError(ConflictError):
    """The provider kept answering 429 after every allowed retry; try again after the reset."""


class ProviderUnavailableError(FleetError):
    """The provider did not answer usefully: network failure, timeout or a 5xx after retries."""

    code = "PROVIDER_UNAVAILABLE"
    http_status = 503


class ProviderIncompatibleError(ProviderUnavailableError):
    """The provider removed an endpoint or method bcfleet calls: retrying cannot help."""


def error_classes() -> dict[str, type[FleetError]]:
    """Every code of the tree and its class, derived from the classes themselves (a subclass
    that keeps its parent's code, such as a provider's variant, is not a code of its own)."""
    found: dict[str, type[FleetError]] = {}
    pending: list[type[FleetError]] = [FleetError]
    while pending:
        cls = pending.pop(0)
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_from_document(status: int, document: Any, retry_after: str | None = None) -> FleetError:
    """The FleetError an error answer of the HTTP API carries, of its code's class: the one
    decoder of the HTTP client and the host agent. A body that is not the error document is a
    plain FleetError naming the status."""
    try:
        body = document["error"]
        code, message, details = str(body["code"]), str(body["message"]), dict(body["details"])
    except (KeyError, TypeError, ValueError):
        return FleetError(f"HTTP {status}: {str(document)[:200]}")
    seconds = int(retry_after) if retry_after and retry_after.isdigit() else None
    cls = error_classes().get(code, FleetError)
    if cls is NoCapacityError:
        return NoCapacityError(
            message,
            instance_size=str(details.get("instance_size", "")),
            retry_after_seconds=seconds,
            details=details,
        )
    error = cls(message, details)
    if seconds is not None:
        error.retry_after_seconds = seconds
    return error


# Exit codes of PRODUCT.md §5.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2
EXIT_LOCKED = 3
EXIT_STALE = 4
EXIT_USAGE = 64


def exit_code_for(error: FleetError) -> int:
    """The CLI exit code for an error: 3 for LOCKED, 4 for STALE_PLAN, 1 otherwise."""
    if isinstance(error, LockedError):
        return EXIT_LOCKED
    if isinstance(error, StalePlanError):
        return EXIT_STALE
    return EXIT_ERROR
