"""A host agent's report of its guests' conditions and balloons and of the host's health.

HostsAPI.report_guests calls these: check_report before the transaction, store_report in it.
A guest's agent conditions (instances.agent_conditions) are kept apart from the server's own
(instances.conditions): each report replaces a listed guest's agent conditions and balloon as
a whole, and nothing else. The report's wording comes from domain.agent_report.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlmodel import Session

from bcfleet.api.guests import host_guest
from bcfleet.api.instance_list import CONDITION_TYPE
from bcfleet.clock import format_time
from bcfleet.domain.agent_report import (
    AgentConditionJson,
    GuestAgentReportJson,
    HealthReportJson,
)
from bcfleet.domain.bounds import (
    AGENT_CONDITIONS_MAX,
    AGENT_GUESTS_MAX,
    AGENT_MESSAGE_MAX,
    NAME_MAX,
    SHAPE_MAX,
    check_text,
    check_whole,
    shown,
)
from bcfleet.domain.states import HostHealth
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.placement.conditions import set_condition
from bcfleet.store.models import Host

BALLOON_BYTES_MAX = SHAPE_MAX << 30
"""A guest's memory is at most SHAPE_MAX GiB (bounds), so its balloon too."""


def _mapping(field: str, value: Any, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{field} must be an object, got {shown(value)}", {"field": field})
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise InvalidInputError(
            f"{field} has unknown fields: {', '.join(map(shown, unknown))}", {"field": field}
        )
    return value


def _list(field: str, value: Any, most: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > most:
        raise InvalidInputError(
            f"{field} must be a list of at most {most}", {"field": field, "bound": most}
        )
    return value


def _condition(field: str, value: Any) -> AgentConditionJson:
    body = _mapping(field, value, ("type", "reason", "message"))
    for name in ("type", "reason"):
        word = body.get(name)
        if not isinstance(word, str) or not CONDITION_TYPE.fullmatch(word):
            raise InvalidInputError(
                f"{field}.{name} must be a word such as StartRefused, got {shown(word)}",
                {"field": f"{field}.{name}"},
            )
    message = check_text(f"{field}.message", body.get("message"), AGENT_MESSAGE_MAX)
    return {"type": body["type"], "reason": body["reason"], "message": message}


def _guest(field: str, value: Any) -> GuestAgentReportJson:
    body = _mapping(field, value, ("id", "conditions", "balloonBytes"))
    guest = check_text(f"{field}.id", body.get("id"), NAME_MAX)
    items = _list(f"{field}.conditions", body.get("conditions", []), AGENT_CONDITIONS_MAX)
    conditions = [_condition(f"{field}.conditions[{n}]", c) for n, c in enumerate(items)]
    kinds = [c["type"] for c in conditions]
    if len(set(kinds)) != len(kinds):
        raise InvalidInputError(
            f"{field}.conditions names a type twice", {"field": f"{field}.conditions"}
        )
    balloon = body.get("balloonBytes")
    if balloon is not None:
        balloon = check_whole(f"{field}.balloonBytes", balloon, 0, BALLOON_BYTES_MAX)
    return {"id": guest, "conditions": conditions, "balloonBytes": balloon}


def check_report(
    health: Any, guests: Any
) -> tuple[HealthReportJson | None, list[GuestAgentReportJson]]:
    """The report as it will be stored; INVALID_INPUT naming the first field out of bounds."""
    checked_health: HealthReportJson | None = None
    if health is not None:
        body = _mapping("health", health, ("state", "message"))
        if body.get("state") not in tuple(HostHealth):
            raise InvalidInputError(
                f"health.state must be one of {', '.join(HostHealth)}",
                {"field": "health.state", "state": shown(body.get("state"))},
            )
        message = body.get("message")  # optional in either state, as the schema says
        if message is not None:
            message = check_text("health.message", message, AGENT_MESSAGE_MAX)
        checked_health = {"state": body["state"], "message": message}
    items = _list("guests", [] if guests is None else guests, AGENT_GUESTS_MAX)
    checked = [_guest(f"guests[{n}]", g) for n, g in enumerate(items)]
    ids = [g["id"] for g in checked]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("guests names a guest twice", {"field": "guests"})
    return checked_health, checked


def store_report(
    session: Session,
    host: Host,
    health: HealthReportJson | None,
    guests: list[GuestAgentReportJson],
    *,
    real_ids: bool,
    at: datetime,
) -> None:
    """Replace each listed guest's agent conditions and balloon, and the host's health.

    A guest id that names no live instance on this host (another host's, another tenant's
    opaque id, a deleted one) is NOT_FOUND, and nothing of the report is kept."""
    if health is not None:  # the host's row before its guests' rows, in every report
        host.agent_health = health_at(host.agent_health, health, at)
        session.add(host)
        session.flush()
    for report in guests:
        instance = host_guest(session, host, report["id"], real_ids=real_ids)
        if instance is None:
            raise NotFoundError(
                f"instance {report['id']!r} is not on host {host.name!r}",
                {"instance": report["id"]},
            )
        instance.agent_conditions = replaced(instance.agent_conditions, report["conditions"], at)
        instance.balloon_bytes = report["balloonBytes"]
        session.add(instance)


def replaced(
    before: list[dict[str, Any]] | None, reported: list[AgentConditionJson], at: datetime
) -> list[dict[str, Any]]:
    """The reported conditions, each keeping its time while its type and reason stay the same
    (placement.conditions.set_condition); any condition not reported again is gone."""
    merged = list(before or [])
    for condition in reported:
        merged = set_condition(
            merged,
            condition["type"],
            reason=condition["reason"],
            message=condition["message"],
            at=at,
        )
    kinds = {c["type"] for c in reported}
    return [c for c in merged if c.get("type") in kinds]


def health_at(
    before: Mapping[str, Any] | None, health: HealthReportJson, at: datetime
) -> dict[str, Any]:
    """The host's health with the time it took its state (kept while the state stays)."""
    since = before.get("at") if before and before.get("state") == health["state"] else None
    return {"state": health["state"], "message": health["message"], "at": since or format_time(at)}
