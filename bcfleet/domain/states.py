"""The states each entity moves through, and which of them are live; stored and shown as these strings.

Each enum is a ``StrEnum``: a member is the string the database column holds and the JSON shows,
so ``instance.state == InstanceState.DELETED`` holds for a row read back as ``"deleted"``.
"""

from __future__ import annotations

from enum import StrEnum


class InstanceState(StrEnum):
    """An instance: hosted ones go pending → running ⇄ stopped → deleted; provider ones are
    provisioning until their server runs."""

    PENDING = "pending"
    PROVISIONING = "provisioning"
    RUNNING = "running"
    STOPPED = "stopped"
    DELETED = "deleted"


INSTANCE_LIVE: tuple[InstanceState, ...] = (
    InstanceState.PROVISIONING,
    InstanceState.RUNNING,
    InstanceState.STOPPED,
)
"""Instances that hold what they were admitted with (a host's claims, a provider's server)."""

INSTANCE_ON_HOST: tuple[InstanceState, ...] = (InstanceState.RUNNING, InstanceState.STOPPED)
"""Instances a host agent runs or keeps: what it pulls specs for."""


class ReservationState(StrEnum):
    """A GPU reservation: pending → placed → binding → active → released."""

    PENDING = "pending"
    PLACED = "placed"
    BINDING = "binding"
    ACTIVE = "active"
    RELEASED = "released"


RESERVATION_LIVE: tuple[ReservationState, ...] = (
    ReservationState.PLACED,
    ReservationState.BINDING,
    ReservationState.ACTIVE,
)
"""Reservations holding GPUs for their window."""


class HostState(StrEnum):
    """A host of a vps-host pool: ready takes guests, draining takes no new ones."""

    READY = "ready"
    DRAINING = "draining"


class HostHealth(StrEnum):
    """A host as its agent reports it: ok, or degraded (libvirt unreachable, say)."""

    OK = "ok"
    DEGRADED = "degraded"


class TokenState(StrEnum):
    """An API token as tokens.list shows it: active, expired (at or past its expiry), revoked."""

    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"


class DeliveryState(StrEnum):
    """A webhook delivery: pending until delivered, or dead after its last attempt."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DEAD = "dead"


class PoolKind(StrEnum):
    """A pool: hosts adopted by name (vps-host), or servers made at a provider (provider)."""

    VPS_HOST = "vps-host"
    PROVIDER = "provider"


PROVIDERS = ("hetzner",)
"""The providers a provider account may name (the API, the CLI and the FleetConfig schema)."""


class AgentReport(StrEnum):
    """What a host agent reports of a guest: running, ready (booted), stopped, or crashed."""

    RUNNING = "running"
    READY = "ready"
    STOPPED = "stopped"
    CRASHED = "crashed"


AGENT_UP: tuple[AgentReport, ...] = (AgentReport.READY,)
"""Reports that mark a running instance ready (spares count from then): only the agent's own
word that the guest is ready (docs/agent.md), never the bare fact that its domain runs."""


INVENTORY_SHORTFALL = "InventoryShortfall"
"""A host's condition while its latest inventory lacks what its guests hold: hosts.report sets
it from domain/physical.inventory_shortfall; listings and the dashboard show it."""
