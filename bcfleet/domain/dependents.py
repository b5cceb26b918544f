"""What depends on a row an operator is about to delete or take away, named as a confirm and an error say it.

No `from __future__ import annotations` here: the HTTP schema reads the NotRequired keys.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NotRequired, TypedDict


class DependentJson(TypedDict):
    kind: str
    id: str
    name: str
    state: NotRequired[str]


class DependentsJson(TypedDict):
    """What depends on a row (fleet.api.dependents; GET …/dependents over HTTP), and what its
    delete would do now: deleted, archived (a flavor some instance used) or refused."""

    items: list[DependentJson]
    outcome: NotRequired[str]


DELETED, ARCHIVED, REFUSED = "deleted", "archived", "refused"
OUTCOMES = (DELETED, ARCHIVED, REFUSED)


@dataclass(frozen=True)
class Dependent:
    """One thing that depends on the row: a service an instance serves, an instance in a pool."""

    kind: str
    id: str
    name: str
    state: str | None = None

    def describe(self) -> str:
        """'service web (deployed)', as SizeUser.describe names what holds a size."""
        return f"{self.kind} {self.name}".strip() + (f" ({self.state})" if self.state else "")

    def to_json(self) -> DependentJson:
        out: DependentJson = {"kind": self.kind, "id": self.id, "name": self.name}
        if self.state is not None:
            out["state"] = self.state
        return out


def named(dependents: Iterable[Dependent]) -> str:
    """'service web (deployed), instance a (running)'."""
    return ", ".join(d.describe() for d in dependents)


def outcome_of(dependents: Iterable[Dependent], outcome: str) -> DependentsJson:
    """The answer naming the dependents and what the delete would do."""
    return {"items": [d.to_json() for d in dependents], "outcome": outcome}
