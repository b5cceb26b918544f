"""What a host agent reports beyond its guests' states: each guest's conditions and balloon,
and the host's own health (ok, or degraded with a message).

The agent's runner builds a report from its Hypervisor's problems() and balloons()
(guest_reports, host_health) and sends only what changed since it last sent (changed);
api.agent_reports checks and stores it. Pure: the standard library and bcfleet.domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

from bcfleet.domain.bounds import AGENT_MESSAGE_MAX, printable
from bcfleet.domain.states import HostHealth

HOST_KEY = "host"
"""The key of the host's own problem among a Hypervisor's problems()."""
HEALTH_OK, HEALTH_DEGRADED = HostHealth.OK.value, HostHealth.DEGRADED.value

STOPPED_OUTSIDE = "the guest stopped outside bcfleet ("
"""How the converge decider words a guest that died or was destroyed behind bcfleet's back."""
HYPERVISOR_REFUSED = "refused: "
"""How the libvirt driver words a call libvirt refused (a define, a start): then its message."""
HUGE_PAGES = "huge pages: "
"""How a huge-page shortfall's condition message starts (hugepage_admission.Shortfall)."""


class AgentConditionJson(TypedDict):
    """One condition of a guest as its host's agent reports it."""

    type: str
    reason: str
    message: str


class GuestAgentReportJson(TypedDict):
    """A guest's conditions and current balloon (bytes; None while it does not run)."""

    id: str
    conditions: list[AgentConditionJson]
    balloonBytes: int | None


class HealthReportJson(TypedDict):
    """The host as its agent sees it: ok, or degraded with why."""

    state: str
    message: str | None


def fit(message: str) -> str:
    """A message as the API takes it: one line, printable, at most AGENT_MESSAGE_MAX characters."""
    text = printable(" ".join(message.split())) or "-"
    return text if len(text) <= AGENT_MESSAGE_MAX else text[: AGENT_MESSAGE_MAX - 1] + "…"


def condition_of(message: str) -> AgentConditionJson:
    """The typed condition a driver's problem message stands for."""
    from bcfleet.domain.hugepage_admission import REFUSED_REASON, REFUSED_TYPE  # not for a listing

    if message.startswith(STOPPED_OUTSIDE):
        how = message[len(STOPPED_OUTSIDE) :].split(")", 1)[0].strip() or "unknown"
        reason = "".join(word.capitalize() for word in how.split()) or "Unknown"
        text = f"{message}; started again after a backoff while it should run"
        return {"type": "StoppedOutside", "reason": reason, "message": fit(text)}
    if message.startswith(HYPERVISOR_REFUSED):
        text = message[len(HYPERVISOR_REFUSED) :]
        return {"type": "HypervisorRefused", "reason": "LibvirtError", "message": fit(text)}
    if message.startswith(HUGE_PAGES):
        return {"type": REFUSED_TYPE, "reason": REFUSED_REASON, "message": fit(message)}
    return {"type": "AgentProblem", "reason": "Reported", "message": fit(message)}


def guest_reports(
    ids: Iterable[str], problems: Mapping[str, str], balloons: Mapping[str, int]
) -> dict[str, GuestAgentReportJson]:
    """Each guest's report: its condition (if the driver holds one) and balloon in bytes."""
    return {
        guest: {
            "id": guest,
            "conditions": [condition_of(problems[guest])] if guest in problems else [],
            "balloonBytes": balloons.get(guest),
        }
        for guest in ids
    }


def host_health(problems: Mapping[str, str]) -> HealthReportJson:
    """Degraded while the driver holds a problem of the host itself (libvirt unreachable)."""
    if HOST_KEY in problems:
        return {"state": HEALTH_DEGRADED, "message": fit(problems[HOST_KEY])}
    return {"state": HEALTH_OK, "message": None}


def changed(
    sent: Mapping[str, GuestAgentReportJson], now: Mapping[str, GuestAgentReportJson]
) -> list[GuestAgentReportJson]:
    """The guests whose report differs from the one last sent (all of them the first time)."""
    return [report for guest, report in sorted(now.items()) if sent.get(guest) != report]
