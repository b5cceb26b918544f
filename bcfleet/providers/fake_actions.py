"""The fake Hetzner's actions: what a create, delete or power-off starts, and how it ends.

Hetzner answers a server create, delete or power action with an action that
is ``running``; ``GET /actions/{id}`` later shows it ``success`` or ``error``
(with the error's code and message). Here an action ends ``seconds`` after it
started by the fake's clock; a knob makes the next actions of one command end
in an error. FakeState owns one :class:`ActionBook` and holds its lock around
every call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bcfleet.clock import format_time


@dataclass
class ActionFailure:
    """The next ``times`` actions of ``command`` end with this error."""

    command: str
    times: int
    code: str
    message: str


@dataclass
class _Action:
    id: int
    command: str
    resources: list[dict[str, Any]]
    started: datetime
    ends: datetime
    error: dict[str, str] | None = None


@dataclass
class ActionBook:
    """Every action of the project, by id."""

    next_id: int = 9_000_001
    actions: dict[int, _Action] = field(default_factory=dict)
    failures: list[ActionFailure] = field(default_factory=list)

    def start(self, command: str, server_id: int, now: datetime, seconds: float) -> dict[str, Any]:
        """Start an action on one server; its JSON as the answer that started it shows it."""
        action = _Action(
            id=self.next_id,
            command=command,
            resources=[{"id": server_id, "type": "server"}],
            started=now,
            ends=now + timedelta(seconds=max(0.0, seconds)),
            error=self._planned_error(command),
        )
        self.next_id += 1
        self.actions[action.id] = action
        return _json(action, running=True)

    def fail_next(self, failure: ActionFailure) -> None:
        """Make the next ``failure.times`` actions of its command end in its error."""
        self.failures = [f for f in self.failures if f.command != failure.command]
        if failure.times > 0:
            self.failures.append(failure)

    def fails(self, action_json: dict[str, Any]) -> bool:
        """Whether the action this JSON shows is going to end in an error."""
        action = self.actions.get(int(action_json["id"]))
        return action is not None and action.error is not None

    def get(self, action_id: int, now: datetime) -> dict[str, Any] | None:
        """One action as GET /actions/{id} shows it now, or None."""
        action = self.actions.get(action_id)
        return None if action is None else _json(action, running=now < action.ends)

    def of_server(self, server_id: int, now: datetime) -> list[dict[str, Any]]:
        """Every action on one server, by id."""
        return [
            _json(action, running=now < action.ends)
            for action_id, action in sorted(self.actions.items())
            if any(r["id"] == server_id for r in action.resources)
        ]

    def _planned_error(self, command: str) -> dict[str, str] | None:
        for failure in self.failures:
            if failure.command == command and failure.times > 0:
                failure.times -= 1
                return {"code": failure.code, "message": failure.message}
        return None


def _json(action: _Action, *, running: bool) -> dict[str, Any]:
    failed = action.error is not None
    return {
        "id": action.id,
        "command": action.command,
        "status": "running" if running else ("error" if failed else "success"),
        "progress": 0 if running else 100,
        "started": format_time(action.started),
        "finished": None if running else format_time(action.ends),
        "resources": [dict(r) for r in action.resources],
        "error": None if running or not failed else dict(action.error or {}),
    }
