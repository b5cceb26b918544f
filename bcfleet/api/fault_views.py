"""Job faults as JSON: the item's `lastError` its tenant reads, and the warnings of `fleet doctor` (root's)."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import LastErrorJson
from bcfleet.clock import format_time
from bcfleet.store.models.jobs import JobFault


def last_error_json(fault: JobFault | None) -> LastErrorJson | None:
    """What the item's tenant sees: the job, the message naming only this item, and when."""
    if fault is None:
        return None
    return {
        "job": fault.job,
        "message": fault.message,
        "failures": fault.failures,
        "firstFailedAt": format_time(fault.first_failed_at),
        "lastFailedAt": format_time(fault.last_failed_at),
    }


def fault_warning(fault: JobFault) -> dict[str, Any]:
    """A `fleet doctor` warning naming the job, the item's kind and id, and the full reason."""
    times = "once" if fault.failures == 1 else f"{fault.failures} times"
    message = (
        f"{fault.job} failed on {fault.subject_kind} {fault.subject_id} {times} since "
        f"{format_time(fault.first_failed_at)} ({fault.error}); the job goes on with the others "
        "and tries this one again on every run"
    )
    if fault.since is not None:
        message += f"; usage not metered since {format_time(fault.since)}"
    return {
        "code": f"{fault.job}.failed",
        "job": fault.job,
        "kind": fault.subject_kind,
        "id": fault.subject_id,
        "tenant": fault.tenant_id,
        "failures": fault.failures,
        "firstFailedAt": format_time(fault.first_failed_at),
        "lastFailedAt": format_time(fault.last_failed_at),
        "unmeteredSince": format_time(fault.since),
        "error": fault.error,
        "message": message,
    }
