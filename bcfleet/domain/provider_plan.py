"""What providers.reconcile does for one provider account: a pure decision over instances and servers.

The job (``bcfleet/jobs/providers.py``) reads a snapshot of the account's provider
instances, lists the provider's servers carrying this fleet's label, and asks
:func:`plan_account` what to do. The rules, in the words of the provider pools
issue:

- every live instance (provisioning, running, stopped) has exactly one server,
  named :func:`server_name` (unique per instance: the idempotency key) and
  labelled with the instance, pool and fleet ids; one is created when none is
  found by label or by name, and the one found is recorded (adopted);
- the server of a deleted instance is deleted at once;
- a server carrying our fleet label with no instance row at all (an orphan), or
  a second server for one live instance, is deleted once it is older than the
  grace period;
- servers without our fleet label never reach this function, and a labelled
  server whose instance is alive elsewhere, or in a state this job does not
  own, is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bcfleet.domain.states import INSTANCE_LIVE, InstanceState

LABEL_INSTANCE = "bcfleet.instance"
LABEL_POOL = "bcfleet.pool"
LABEL_FLEET = "bcfleet.fleet"
SERVER_GONE = "deleted"  # provider_status of a deleted instance whose server is gone


def server_name(instance_id: str) -> str:
    """The server's name: unique per instance and a valid hostname (``ins_01jz…`` → ``bcf-ins-01jz…``)."""
    return "bcf-" + instance_id.replace("_", "-")


def server_labels(fleet_id: str, pool_id: str, instance_id: str) -> dict[str, str]:
    """The labels every server of an instance carries."""
    return {LABEL_FLEET: fleet_id, LABEL_POOL: pool_id, LABEL_INSTANCE: instance_id}


@dataclass(frozen=True)
class InstanceView:
    """A provider instance as the job read it: live, or deleted with a server still recorded."""

    id: str
    pool_id: str
    state: str
    offer_id: str | None
    server_id: str | None
    server_status: str | None


@dataclass(frozen=True)
class ServerView:
    """A server as the provider listed it."""

    id: str
    name: str
    status: str
    created: datetime
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def instance_id(self) -> str | None:
        return self.labels.get(LABEL_INSTANCE)


@dataclass(frozen=True)
class Create:
    """Make the instance's server (none was found by label or name)."""

    instance_id: str
    pool_id: str
    offer_id: str
    name: str
    labels: Mapping[str, str] = field(hash=False)


@dataclass(frozen=True)
class Record:
    """Store the server's id and status on the instance (adopting it if it was not recorded)."""

    instance_id: str
    server_id: str
    status: str
    adopted: bool


@dataclass(frozen=True)
class Delete:
    """Delete a server: its instance was deleted, or it is an orphan or a duplicate past grace."""

    server_id: str
    name: str
    instance_id: str | None
    reason: str  # instance-deleted | orphan | duplicate


@dataclass(frozen=True)
class Forget:
    """A deleted instance's server is gone: mark it so the job stops looking."""

    instance_id: str


@dataclass(frozen=True)
class Wait:
    """An orphan or duplicate still inside the grace period."""

    server_id: str
    reason: str
    seconds_left: float


@dataclass(frozen=True)
class Stuck:
    """A live instance whose server cannot be made, and why."""

    instance_id: str
    reason: str
    message: str


@dataclass(frozen=True)
class ProviderPlan:
    """The actions of one account's pass, by kind."""

    records: tuple[Record, ...] = ()
    creates: tuple[Create, ...] = ()
    deletes: tuple[Delete, ...] = ()
    forgets: tuple[Forget, ...] = ()
    waits: tuple[Wait, ...] = ()
    stuck: tuple[Stuck, ...] = ()


@dataclass
class _Builder:
    records: list[Record] = field(default_factory=list)
    creates: list[Create] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    forgets: list[Forget] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    stuck: list[Stuck] = field(default_factory=list)

    def build(self) -> ProviderPlan:
        return ProviderPlan(
            records=tuple(self.records),
            creates=tuple(self.creates),
            deletes=tuple(self.deletes),
            forgets=tuple(self.forgets),
            waits=tuple(self.waits),
            stuck=tuple(self.stuck),
        )


def plan_account(
    *,
    fleet_id: str,
    pool_ids: Iterable[str],
    known_pool_ids: Iterable[str],
    instances: Sequence[InstanceView],
    servers: Sequence[ServerView],
    states: Mapping[str, str],
    now: datetime,
    grace_seconds: float,
) -> ProviderPlan:
    """The actions for one account.

    ``pool_ids`` are the account's provider pools and ``known_pool_ids`` every
    provider pool of the fleet: a server labelled with another known pool is the
    other account's business. ``states`` gives the state of instances that
    servers name but ``instances`` does not hold (absent: no such row).
    """
    mine, others = set(pool_ids), set(known_pool_ids)
    considered = [s for s in servers if _in_scope(s, fleet_id, mine, others)]
    plan = _Builder()
    claimed: set[str] = set()
    for instance in sorted(instances, key=lambda i: i.id):
        matched = _servers_of(instance, considered)
        claimed.update(s.id for s in matched)
        if instance.state in INSTANCE_LIVE:
            _plan_live(plan, instance, matched, fleet_id, now, grace_seconds)
        else:
            _plan_deleted(plan, instance, matched)
    for server in considered:
        if server.id not in claimed:
            _plan_unclaimed(plan, server, states, now, grace_seconds)
    return plan.build()


def _in_scope(server: ServerView, fleet_id: str, mine: set[str], others: set[str]) -> bool:
    if server.labels.get(LABEL_FLEET) != fleet_id:
        return False
    pool = server.labels.get(LABEL_POOL)
    return pool in mine or pool not in others


def _servers_of(instance: InstanceView, servers: Sequence[ServerView]) -> list[ServerView]:
    name = server_name(instance.id)
    return [s for s in servers if s.instance_id == instance.id or s.name == name]


def _plan_live(
    plan: _Builder,
    instance: InstanceView,
    matched: list[ServerView],
    fleet_id: str,
    now: datetime,
    grace_seconds: float,
) -> None:
    if not matched:
        if not instance.offer_id:
            plan.stuck.append(
                Stuck(instance.id, "NoOffer", "the instance's shape names no offerId")
            )
            return
        labels = server_labels(fleet_id, instance.pool_id, instance.id)
        plan.creates.append(
            Create(
                instance.id, instance.pool_id, instance.offer_id, server_name(instance.id), labels
            )
        )
        return
    kept = _keeper(instance, matched)
    if _needs_record(instance, kept):
        adopted = instance.server_id != kept.id
        plan.records.append(Record(instance.id, kept.id, kept.status, adopted))
    for extra in matched:
        if extra.id != kept.id:
            _delete_after_grace(plan, extra, "duplicate", now, grace_seconds)


def _keeper(instance: InstanceView, matched: list[ServerView]) -> ServerView:
    """The recorded server, else the one with the instance's name, else the oldest."""
    name = server_name(instance.id)
    return min(
        matched,
        key=lambda s: (s.id != instance.server_id, s.name != name, s.created, s.id),
    )


def _needs_record(instance: InstanceView, server: ServerView) -> bool:
    if instance.server_id != server.id or instance.server_status != server.status:
        return True
    return instance.state == InstanceState.PROVISIONING and server.status == "running"


def _plan_deleted(plan: _Builder, instance: InstanceView, matched: list[ServerView]) -> None:
    if not matched:
        plan.forgets.append(Forget(instance.id))
        return
    for server in matched:
        plan.deletes.append(Delete(server.id, server.name, instance.id, "instance-deleted"))


def _plan_unclaimed(
    plan: _Builder,
    server: ServerView,
    states: Mapping[str, str],
    now: datetime,
    grace_seconds: float,
) -> None:
    instance_id = server.instance_id
    state = states.get(instance_id) if instance_id else None
    if state == InstanceState.DELETED:
        plan.deletes.append(Delete(server.id, server.name, instance_id, "instance-deleted"))
    elif state is None:
        _delete_after_grace(plan, server, "orphan", now, grace_seconds)
    # any other state: an instance that lives elsewhere; not ours to judge


def _delete_after_grace(
    plan: _Builder, server: ServerView, reason: str, now: datetime, grace_seconds: float
) -> None:
    age = (now - server.created).total_seconds()
    if age >= grace_seconds:
        plan.deletes.append(Delete(server.id, server.name, server.instance_id, reason))
    else:
        plan.waits.append(Wait(server.id, reason, grace_seconds - age))
