"""The JSON documents the API answers with, typed: one TypedDict per object, keys as the JSON has them.

The OpenAPI component schemas of these objects are generated from these types
(bcfleet/http/typed_schemas.py), so a field added here is a field the document states.
A TypedDict named ``XJson`` is the component ``X``; a nested TypedDict is a ``$ref`` to its own.
The event document lives in bcfleet/domain/event_document.py, since the store renders it.
"""

from collections.abc import Mapping
from typing import Annotated, Any, NotRequired, TypedDict

from bcfleet.domain.agent_report import GuestAgentReportJson
from bcfleet.domain.event_document import EventJson
from bcfleet.domain.guest_view import HostBookingJson
from bcfleet.domain.instance_spec import (
    InstanceSpecJson,
)
from bcfleet.domain.job_documents import JobRunJson, JobStatusJson
from bcfleet.domain.json_types import OneOf, Time
from bcfleet.domain.states import (
    DeliveryState,
    HostHealth,
    HostState,
    InstanceState,
    ReservationState,
    TokenState,
)

HostStateText = Annotated[str, OneOf(tuple(HostState))]
"""A host's state (domain.states.HostState)."""

TokenStateText = Annotated[str, OneOf(tuple(TokenState))]
"""An API token's state (domain.states.TokenState)."""

InstanceStateText = Annotated[str, OneOf(tuple(InstanceState))]
"""An instance's state (domain.states.InstanceState)."""

DeliveryStateText = Annotated[str, OneOf(tuple(DeliveryState))]
"""A webhook delivery's state (domain.states.DeliveryState)."""

ReservationStateText = Annotated[str, OneOf(tuple(ReservationState))]
"""A reservation's state (domain.states.ReservationState)."""


class TenantJson(TypedDict):
    id: str
    name: str
    createdAt: Time


class PrincipalJson(TypedDict):
    """host: the node id an agent principal is bound to (agents only)."""

    id: str
    tenantId: str
    name: str
    role: str
    createdAt: Time
    host: NotRequired[str]


class TokenJson(TypedDict):
    """The token is shown once, here. replaces: the id of the token a rotation revoked."""

    id: str
    token: str
    principal: PrincipalJson
    createdAt: Time
    expiresAt: Time | None
    replaces: NotRequired[str]


class WhoAmIJson(TypedDict):
    """Who a credential acts as: the tenant and role, and the principal a token belongs to
    (None for the local operator, who is root's admin without a token)."""

    tenantId: str
    role: str
    principal: str | None
    principalId: str | None
    operator: bool


class TokenInfoJson(TypedDict):
    """A token as listed: never the token or its hash."""

    id: str
    principal: str
    principalId: str
    role: str
    host: NotRequired[str]
    hint: str
    createdAt: Time
    expiresAt: Time | None
    revokedAt: Time | None
    state: TokenStateText


class WebhookJson(TypedDict):
    id: str
    tenantId: str
    url: str
    eventTypes: list[str]
    active: bool
    cursor: int
    createdAt: Time


class WebhookCreatedJson(WebhookJson):
    """The secret is shown once, here."""

    secret: str


class ProviderAccountJson(TypedDict):
    """The account as the API shows it: never the token, only whether one is stored."""

    id: str
    name: str
    provider: str
    tokenEnv: str | None
    hasToken: bool
    endpoint: str | None
    createdAt: Time


class QuotaJson(TypedDict):
    """A tenant's quotas in one pool: the limits set (null: unlimited) and the use of each."""

    tenantId: str
    poolId: str
    pool: str
    limits: Mapping[str, int | None]
    used: Mapping[str, int]


class PoolPolicyJson(TypedDict):
    """A pool's policy. As stored (policy): only what the pool sets, a value stored before the
    bounds existed shows as null. In force (effectivePolicy): every resource, the fleet's
    default reserve under the pool's own, ratios clamped to 0.1..100 and 1 when unset."""

    overcommit: Mapping[str, float | None]
    hostReserve: Mapping[str, float | None]


class PoolJson(TypedDict):
    id: str
    name: str
    kind: str
    owner: str
    policy: PoolPolicyJson
    effectivePolicy: PoolPolicyJson
    version: int
    createdAt: Time
    gpuModel: NotRequired[str]
    providerAccountId: NotRequired[str]
    offeredTo: NotRequired[list[str]]
    notices: NotRequired[list[dict[str, str]]]


class FlavorPlacementJson(TypedDict, total=False):
    numaAffine: bool
    pinned: bool
    hugepageSizeBytes: int | None


class FlavorJson(TypedDict):
    id: str
    poolId: str
    name: str
    vcpu: int
    memoryGiB: int
    diskGiB: int
    gpus: int
    archived: bool
    version: int
    offerId: NotRequired[str]
    placement: NotRequired[FlavorPlacementJson]
    warnings: NotRequired[list[str]]


class NodeResourceJson(TypedDict):
    resource: str
    allocatable: int
    ratio: float | None
    capacity: int
    allocated: int


class HostHealthJson(TypedDict):
    """The host as its agent last reported it: ok, or degraded with why; at: since when."""

    state: Annotated[str, OneOf(tuple(HostHealth))]
    message: str | None
    at: Time


class HostFieldsJson(TypedDict):
    """The fields every rendering of a host has; health only once its agent reported one."""

    id: str
    name: str
    poolId: str
    pool: str
    labels: dict[str, str]
    tenantControlled: bool
    state: HostStateText
    status: str
    inventoryReportedAt: Time | None
    inventoryError: str | None
    createdAt: Time
    conditions: list[Mapping[str, Any]]
    health: NotRequired[HostHealthJson]


class HostJson(HostFieldsJson):
    """A host as adopt, report, drain and ready answer it (resources where they were read)."""

    resources: NotRequired[list[NodeResourceJson]]


class GpuCountJson(TypedDict):
    """GPUs present, and those booked now by instances and reservations."""

    total: int
    used: int


class HostListItemJson(HostFieldsJson):
    """A host as hosts.list has it: no inventory; capacity, GPUs, degraded guests."""

    resources: list[NodeResourceJson]
    gpus: GpuCountJson
    degradedGuests: int


class HostDetailJson(HostListItemJson):
    """A host as hosts.show has it: the listing's item, the inventory and the CPUs the host
    keeps for itself (the fleet's host_reserve.vcpu, or its pool's; None without an inventory)."""

    inventory: Mapping[str, Any] | None
    reservedCpus: list[int] | None


class InstanceJson(TypedDict):
    """An instance: its shape is its flavor's at admission, its node as the reader sees it (an
    opaque id for a guest tenant). purpose and size: a spare or a service's instance."""

    id: str
    tenantId: str
    poolId: str
    flavorId: str | None
    name: str
    state: InstanceStateText
    shape: Mapping[str, Any]
    nodeId: str | None
    conditions: list[Mapping[str, Any]]
    createdAt: Time
    updatedAt: Time
    flavor: NotRequired[str]
    hostPlacement: NotRequired[Mapping[str, Any]]
    purpose: NotRequired[str]
    size: NotRequired[str | None]
    readyAt: NotRequired[Time]
    deletedAt: NotRequired[Time]
    providerServerId: NotRequired[str]
    providerStatus: NotRequired[str | None]
    idempotencyKey: NotRequired[str]
    unreadable: NotRequired[list[str]]
    """The stored fields that cannot be read (shown empty): present only on a damaged row."""
    agentConditions: NotRequired[list[Mapping[str, Any]]]
    """What its host's agent reports (StartRefused, HypervisorRefused, StoppedOutside), apart
    from the server's conditions: present once it reported one."""
    balloonBytes: NotRequired[int]
    """The guest's memory as its balloon leaves it, as its agent last reported it."""


class InstancePageJson(TypedDict):
    """instances.list: total (how many there are in all) and cursor (the `after` of the next
    page, null on the last) only with a limit."""

    items: list[InstanceJson]
    total: NotRequired[int]
    cursor: NotRequired[int | None]


class InstanceBatchJson(TypedDict):
    """instances.create with a count: the instances made, in the batch's order, how many were
    asked for, placed and refused, and why the refused did not fit (null when none was)."""

    items: list[InstanceJson]
    count: int
    placed: int
    refused: int
    reason: str | None


class GuestStateJson(TypedDict):
    """The guest an agent reported on, under its opaque id: root's admin gets the whole
    Instance."""

    id: str
    state: InstanceStateText
    readyAt: Time | None


class AgentReportJson(TypedDict):
    """What an agent's report of its guests and host answers: the report as stored, its
    guests under the ids the agent used."""

    host: str
    health: HostHealthJson | None
    guests: list[GuestAgentReportJson]


ReservationDeviceJson = TypedDict("ReservationDeviceJson", {"class": str, "count": int})
"""What a reservation holds: a class of device and how many."""


class ReservationWindowJson(TypedDict):
    """When a placed reservation holds its devices."""

    start: Time
    end: Time


class ReservationJson(TypedDict):
    """A GPU reservation as document 003 shows it; its nodes as the reader sees them."""

    id: str
    tenantId: str
    poolId: str
    devices: list[ReservationDeviceJson]
    nodes: int
    binding: str
    spot: bool
    state: ReservationStateText
    duration: str
    requestedStart: Time
    during: ReservationWindowJson | None
    nodeIds: list[str]
    conditions: list[Mapping[str, Any]]
    createdAt: Time
    updatedAt: Time
    idempotencyKey: NotRequired[str]
    deadline: NotRequired[Time]
    activatedAt: NotRequired[Time]
    releasedAt: NotRequired[Time]
    releaseReason: NotRequired[str]


class ReservationPageJson(TypedDict):
    items: list[ReservationJson]


class ServiceComputeJson(TypedDict):
    """What a service replica gets on a size (limits)."""

    vcpu: int
    memoryGiB: int
    text: str


class IndexComputeJson(TypedDict):
    """What an index pod gets on a size: its vCPU may burst."""

    vcpu: float
    burstable: bool
    memoryGiB: int
    text: str


class ServiceJson(TypedDict):
    """A service with the size it runs on and the compute a replica gets there. conditions:
    why its instance is pending; notices and message: what a size change says."""

    id: str
    tenantId: str
    workspace: str
    name: str
    hosting: str
    deployed: bool
    status: str
    size: str | None
    legacy: bool
    effectiveSize: str
    sizeLabel: str
    vcpu: int
    memoryGiB: int
    environmentId: str | None
    environment: str | None
    instanceId: str | None
    instanceState: str | None
    createdAt: Time
    updatedAt: Time
    deployedAt: Time | None
    conditions: NotRequired[list[Mapping[str, Any]]]
    notices: NotRequired[list[str]]
    message: NotRequired[str]


class ServicePageJson(TypedDict):
    items: list[ServiceJson]


class IndexJson(TypedDict):
    """An index with its pod size (null: the default pod size) and the compute a pod gets."""

    id: str
    tenantId: str
    workspace: str
    name: str
    podSize: str | None
    podSizeLabel: str
    deployed: bool
    createdAt: Time
    updatedAt: Time
    compute: NotRequired[IndexComputeJson]


class IndexPageJson(TypedDict):
    items: list[IndexJson]


class EnvironmentJson(TypedDict):
    """An environment: the size its services run on, and how many services it has."""

    id: str
    tenantId: str
    name: str
    size: str
    sizeLabel: str
    createdAt: Time
    updatedAt: Time
    services: NotRequired[int]


class EnvironmentPageJson(TypedDict):
    items: list[EnvironmentJson]


class LastErrorJson(TypedDict):
    """A job's failure on one item, as the item's tenant sees it: the message names only it."""

    job: str
    message: str
    failures: int
    firstFailedAt: Time
    lastFailedAt: Time


class ComputeSizeJson(TypedDict):
    """One size in the Compute tab: its computes, switch, spares, credits and what uses it."""

    label: str
    service: ServiceComputeJson
    index: IndexComputeJson
    enabled: bool
    spares: int
    creditsPerMonth: int
    defaultLocked: bool
    usedBy: NotRequired[list[dict[str, str]]]


class DefaultSizeChoiceJson(TypedDict):
    size: str
    label: str


class SizeInUseJson(TypedDict):
    """A size a change would turn off and what still uses it."""

    size: str
    label: str
    users: list[dict[str, str]]


class ComputeSettingsJson(TypedDict):
    """A tenant's compute settings. lastError: the spares job's failure on this tenant.
    message and notices: what a save says; notices, problems and inUse: what a draft says."""

    tenant: str
    sizes: Mapping[str, ComputeSizeJson]
    totalCreditsPerMonth: int
    defaultSize: str | None
    effectiveDefaultSize: str
    defaultSizeChoices: list[DefaultSizeChoiceJson]
    serverlessPoolId: str | None
    serverlessPool: str | None
    version: int
    managed: bool
    updatedAt: Time | None
    lastError: LastErrorJson | None
    message: NotRequired[str]
    notices: NotRequired[list[dict[str, str]]]
    problems: NotRequired[list[str]]
    inUse: NotRequired[list[SizeInUseJson]]


class WebhookDeliveryJson(TypedDict):
    """One event for one webhook: pending until a 2xx answer, dead after the last failed try."""

    id: int
    webhookId: str
    eventId: str
    eventSeq: int
    eventType: str
    state: DeliveryStateText
    attempts: int
    nextAttemptAt: Time
    lastStatus: int | None
    lastError: str | None
    createdAt: Time
    deliveredAt: Time | None


class WebhookDeliveryPageJson(TypedDict):
    items: list[WebhookDeliveryJson]


class EventPageJson(TypedDict):
    """A page of the event log: cursor is the last event's seq (null: none yet), to resume
    after."""

    items: list[EventJson]
    cursor: int | None


class MeterJson(TypedDict):
    """A billing meter of the catalogue (no route shows it: the CLI does)."""

    name: str
    unit: str
    description: str
    createdAt: Time


class MeterPageJson(TypedDict):
    items: list[MeterJson]


class UsageWindowJson(TypedDict):
    """One metered window of a subject; a dead letter (usage of an unknown meter) also says why
    and when it was replayed."""

    id: int
    tenantId: str
    subjectId: str
    subjectKind: str
    poolId: str | None
    meter: str
    windowStart: Time
    windowEnd: Time
    quantity: str
    createdAt: Time
    reason: NotRequired[str]
    replayedAt: NotRequired[Time | None]


class UsagePageJson(TypedDict):
    """A page of windows: cursor is the last window's id (null: none yet), to resume after."""

    items: list[UsageWindowJson]
    cursor: int | None


class DeadLetterPageJson(TypedDict):
    items: list[UsageWindowJson]


class ReplayedJson(TypedDict):
    """What a replay of the dead letters did: replayed, billed now, still pending."""

    replayed: int
    billed: int
    pending: int


class JobJson(JobStatusJson):
    """A job's schedule, with its failures and last error among the fleet's latest recorded
    runs."""

    failures: int
    lastError: str | None


class JobPageJson(TypedDict):
    items: list[JobJson]


class JobRunPageJson(TypedDict):
    items: list[JobRunJson]


class HostSpecsJson(TypedDict):
    """The InstanceSpecs a host's agent applies: every live instance on the host."""

    host: str
    items: list[InstanceSpecJson]


class HostReservationsJson(TypedDict):
    """A node's desired GPU state: the reservations booked on it and their windows;
    generation changes whenever the node's bookings change."""

    host: str
    generation: int
    items: list[HostBookingJson]


class DeletedJson(TypedDict):
    """What deleting an object answers: its id, and that it is gone."""

    id: str
    deleted: bool


class FlavorDeletedJson(TypedDict):
    """What deleting a flavor did: deleted when no instance ever used it, else archived."""

    deleted: bool
    archived: bool


class TokenRevokedJson(TypedDict):
    """A revoked token: its id, and when it stopped working."""

    id: str
    revoked: bool
    revokedAt: Time


class TenantPageJson(TypedDict):
    items: list[TenantJson]


class TokenPageJson(TypedDict):
    items: list[TokenInfoJson]


class PoolPageJson(TypedDict):
    items: list[PoolJson]


class FlavorPageJson(TypedDict):
    items: list[FlavorJson]


class HostPageJson(TypedDict):
    items: list[HostListItemJson]


class WebhookPageJson(TypedDict):
    items: list[WebhookJson]


class QuotaPageJson(TypedDict):
    items: list[QuotaJson]


class ProviderAccountPageJson(TypedDict):
    items: list[ProviderAccountJson]


class PolicyJson(TypedDict):
    """A policy as listed: its statements and the principals (by name) it is attached to."""

    id: str
    tenantId: str
    name: str
    statements: list[dict[str, Any]]
    attachedTo: list[str]
    createdAt: Time


class PolicyPageJson(TypedDict):
    items: list[PolicyJson]
