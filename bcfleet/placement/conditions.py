"""Conditions on instances and reservations (Unschedulable, PlacementDegraded, Preempted), Kubernetes-style."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bcfleet.clock import format_time


def set_condition(
    conditions: list[dict[str, Any]], kind: str, *, reason: str, message: str, at: datetime
) -> list[dict[str, Any]]:
    """A new list with the condition of that type set (its transition time kept if unchanged)."""
    kept = [c for c in conditions if c.get("type") != kind]
    previous = next((c for c in conditions if c.get("type") == kind), None)
    since = (
        previous.get("lastTransitionTime")
        if previous and previous.get("reason") == reason
        else None
    )
    kept.append(
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": since or format_time(at),
        }
    )
    return kept


def clear_condition(conditions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [c for c in conditions if c.get("type") != kind]


def has_condition(conditions: list[dict[str, Any]], kind: str) -> bool:
    return any(c.get("type") == kind for c in conditions)
