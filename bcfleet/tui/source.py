"""The dashboard's data seam: every read and change the views make, over fleet.api (LocalSource).

Views call a `FleetSource` from thread workers and get the API's own JSON
documents back (camelCase, as the CLI's `--json` and the HTTP API print them),
so an HTTP implementation can slot in beside LocalSource without touching a
view. Areas whose API this build lacks raise `NotAvailable`; the view then says
so instead of inventing data. API errors arrive as `FleetError`; anything else
(a database that went away, a refused connection) is the "disconnected" state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from bcfleet.api.auth import LOCAL_OPERATOR, Credential
from bcfleet.domain.compute_settings import (
    ChangeResult,
    ComputeChange,
    ComputeSettings,
    SizeUser,
    draft_change,
)
from bcfleet.fleet import Fleet

JSON = dict[str, Any]


class NotAvailable(Exception):
    """The area's API is not in this build; the view shows that rather than data."""

    def __init__(self, area: str) -> None:
        super().__init__(f"{area} is not available in this build")
        self.area = area


@dataclass(frozen=True)
class PreviewRequest:
    """The preemption preview form: what capacity.preview is asked."""

    tenant: str
    pool: str
    gpus: int
    duration: str
    nodes: int = 1
    spot: bool = False


@dataclass(frozen=True)
class ComputeSnapshot:
    """A tenant's compute settings as the Compute tab opens them, with what uses each size then."""

    tenant: str
    settings: ComputeSettings
    users: Mapping[str, tuple[SizeUser, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SaveOutcome:
    """A saved change: the settings now stored, the message and any notices (spares capped)."""

    settings: ComputeSettings
    message: str
    notices: tuple[str, ...] = ()


class FleetSource(Protocol):
    """What the dashboard reads and changes; one implementation per transport."""

    def describe(self) -> str:
        """Where the data comes from, for the header (a database URL, an HTTP endpoint)."""
        ...

    def now(self) -> datetime:
        """The fleet's time: ages and countdowns are measured from it."""
        ...

    def revision(self) -> int | None:
        """A number that changes whenever the state does (None: unknown, always refetch)."""
        ...

    def tenants(self) -> list[JSON]: ...

    def pools(self) -> list[JSON]: ...

    def hosts(self) -> list[JSON]: ...

    def host(self, host: str) -> JSON: ...

    def set_draining(self, host: str, draining: bool) -> JSON: ...

    def instances(self) -> list[JSON]:
        """Every live instance (running, stopped, pending) of the fleet."""
        ...

    def instance(self, instance_id: str) -> JSON: ...

    def host_guests(self, host: str) -> list[JSON]:
        """The InstanceSpecs of a host's live guests: pinned CPUs, NUMA nodes, GPUs."""
        ...

    def degraded(self) -> list[JSON]:
        """Live instances with a PlacementDegraded condition, each with its host's name."""
        ...

    def reservations(self) -> list[JSON]: ...

    def preview(self, request: PreviewRequest) -> JSON: ...

    def compute_settings(self, tenant: str) -> ComputeSnapshot: ...

    def draft_compute_settings(
        self, current: ComputeSettings, change: ComputeChange
    ) -> ChangeResult: ...

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome: ...

    def usage(self, tenant: str | None = None) -> list[JSON]: ...

    def events(self, after: int | None, types: Sequence[str] = (), limit: int = 200) -> JSON: ...

    def jobs(self) -> list[JSON]: ...


def is_degraded(instance: Mapping[str, Any]) -> bool:
    """Whether an instance runs with a PlacementDegraded condition."""
    return any(
        c.get("type") == "PlacementDegraded" and c.get("status", "True") == "True"
        for c in instance.get("conditions") or ()
    )


class LocalSource:
    """The dashboard over an open Fleet in this process, as the local operator by default."""

    def __init__(
        self, fleet: Fleet, credential: Credential = LOCAL_OPERATOR, *, label: str | None = None
    ) -> None:
        self.fleet = fleet
        self.api = fleet.api
        self.credential = credential
        self.label = label

    def describe(self) -> str:
        return self.label or str(self.fleet.engine.url)  # a password, if any, shows as ***

    def now(self) -> datetime:
        return self.fleet.now()

    def revision(self) -> int | None:
        # The API has no cheap "has anything changed" read yet; the store's revision
        # counter (bumped by every write transaction) is one integer, read in its own
        # read transaction. An HTTP source would use an ETag instead.
        from bcfleet.store.uow import current_revision

        with self.fleet.read() as session:
            return current_revision(session)

    def tenants(self) -> list[JSON]:
        items: list[JSON] = self.api.tenants.list(self.credential)["items"]
        return items

    def pools(self) -> list[JSON]:
        items: list[JSON] = self.api.pools.list(self.credential)["items"]
        return items

    def hosts(self) -> list[JSON]:
        items: list[JSON] = self.api.hosts.list(self.credential)["items"]
        return items

    def host(self, host: str) -> JSON:
        return self.api.hosts.show(self.credential, host=host)

    def set_draining(self, host: str, draining: bool) -> JSON:
        return self.api.hosts.set_state(self.credential, host=host, draining=draining)

    def instances(self) -> list[JSON]:
        items: list[JSON] = self.api.instances.list(self.credential)["items"]
        return items

    def instance(self, instance_id: str) -> JSON:
        return self.api.instances.show(self.credential, instance_id)

    def host_guests(self, host: str) -> list[JSON]:
        items: list[JSON] = self.api.instances.specs_for_host(self.credential, host)["items"]
        return items

    def degraded(self) -> list[JSON]:
        found = [i for i in self.instances() if is_degraded(i)]
        names: dict[str, str] = {}
        for node_id in sorted({i["nodeId"] for i in found if i.get("nodeId")}):
            names[node_id] = self.api.hosts.show(self.credential, host=node_id)["name"]
        return [{**i, "host": names.get(i.get("nodeId") or "")} for i in found]

    def reservations(self) -> list[JSON]:
        raise NotAvailable("Reservations")

    def preview(self, request: PreviewRequest) -> JSON:
        del request
        raise NotAvailable("The capacity preview")

    def compute_settings(self, tenant: str) -> ComputeSnapshot:
        del tenant
        raise NotAvailable("Compute settings")

    def draft_compute_settings(
        self, current: ComputeSettings, change: ComputeChange
    ) -> ChangeResult:
        return draft_change(current, change)

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome:
        del tenant, current, desired
        raise NotAvailable("Compute settings")

    def usage(self, tenant: str | None = None) -> list[JSON]:
        del tenant
        raise NotAvailable("Usage")

    def events(self, after: int | None, types: Sequence[str] = (), limit: int = 200) -> JSON:
        return self.api.events.list(self.credential, after=after, types=types, limit=limit)

    def jobs(self) -> list[JSON]:
        raise NotAvailable("Jobs")
