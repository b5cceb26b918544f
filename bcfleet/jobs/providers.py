"""The providers.reconcile job: make, track and delete provider servers; the scheduler calls run_reconcile.

Every 60 s (PRODUCT.md §7), for each provider account with provider pools:

1. read, in one short read transaction, the account's live provider instances
   and the deleted ones whose server is not known to be gone;
2. list the provider's servers carrying this fleet's label (``bcfleet.fleet``,
   :func:`fleet_id`, made once per database) and look up the instances they name;
3. ask the pure decider (``bcfleet/domain/provider_plan.py``) what to do;
4. call the provider (no transaction open), and record each result in a short
   write transaction that re-reads the instance under a row lock: an instance
   deleted while its server was being made gets that server deleted at once.

A server is never duplicated: its name (``bcf-<instance id>``) is unique at the
provider, so a create whose answer was lost is found again by name (the Hetzner
client does this itself, and so does the next pass, by label). A server is
never lost: the instance keeps ``provider_server_id`` until the server is
confirmed gone (``provider_status`` ``deleted``). Servers without our fleet
label are never listed, so never touched; orphans with our label are deleted
after ``settings.provider_delete_grace_seconds``.

A 429 that outlasts the client's retries ends the account's pass (the rest
waits for the next tick); any other provider failure is counted and, for a
create, written on the instance as a ProviderError condition.

Faults stay local (bcfleet/jobs/faults.py): each server's step (record, create, delete) runs
on its own; one that fails (the provider refuses a delete, an instance row that cannot be
recorded) is kept as a job fault on its instance (or on the server, for an orphan), named by
`fleet doctor`, counted as `failed`, and the pass goes on with the other servers. An account
whose pass fails as a whole (its provider unreachable, its instances unreadable) is kept as
a fault on the account and counted in `errors`; the other accounts are reconciled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from bcfleet.domain.provider_plan import (
    LABEL_FLEET,
    SERVER_GONE,
    Create,
    Delete,
    InstanceView,
    ProviderPlan,
    ServerView,
    plan_account,
)
from bcfleet.domain.states import INSTANCE_LIVE, InstanceState, PoolKind
from bcfleet.errors import ConflictError, FleetError, NotFoundError, ProviderRateLimitedError
from bcfleet.jobs.faults import FaultLog, Item, ends_the_run
from bcfleet.jobs.provider_records import forget_servers, mark_problem, record_server
from bcfleet.providers.base import Offer, ProviderImpl, ProviderServer
from bcfleet.providers.offer_catalog import AccountRef, OfferCatalog
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import FleetIdentity, Instance, Pool, ProviderAccount

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

JOB = "providers.reconcile"
IMAGE = "ubuntu-24.04"
MAX_CREATES_PER_PASS = 100
COUNTS = (
    "accounts", "servers", "created", "adopted", "recorded", "deleted", "forgotten",
    "waiting", "raced", "failed", "unknown", "rateLimited", "errors",
)  # fmt: skip


def run_reconcile(fleet: JobHandle, now: datetime) -> dict[str, int]:
    """One pass over every provider account; returns counts of what it did."""
    counts = dict.fromkeys(COUNTS, 0)
    identity = fleet_id(fleet)
    accounts, known_pools = _accounts(fleet)
    catalog = fleet.offer_catalog
    faults = FaultLog(fleet, JOB, ("instance", "server", "providerAccount"))
    gone = and_(
        col(Instance.state) == InstanceState.DELETED, col(Instance.provider_status) == SERVER_GONE
    )
    faults.prune("instance", Instance.id, ~gone)
    for account, pool_ids in accounts:
        counts["accounts"] += 1
        run = _Pass(fleet, catalog, account, identity, counts, faults)
        whole = Item("providerAccount", account.id, account.tenant_id)
        try:
            run.reconcile(pool_ids, known_pools, now)
        except ProviderRateLimitedError:
            counts["rateLimited"] += 1
        except Exception as error:
            if ends_the_run(error):
                raise
            counts["errors"] += 1
            faults.record(whole, error, count=False)
        else:
            faults.forget(whole)
    counts["failed"] += faults.failed
    return counts


def fleet_id(fleet: JobHandle) -> str:
    """This database's fleet id (``flt_…``), made on first use; the bcfleet.fleet label's value."""
    with fleet.read() as session:
        row = session.get(FleetIdentity, 1)
        if row is not None:
            return row.fleet_id
    try:
        with fleet.write(bump_revision=False) as session:
            if session.get(FleetIdentity, 1) is None:
                session.add(
                    FleetIdentity(id=1, fleet_id=fleet.new_id("flt"), created_at=fleet.now())
                )
    except IntegrityError:
        pass  # another process made it first
    with fleet.read() as session:
        made = session.get(FleetIdentity, 1)
        assert made is not None
        return made.fleet_id


def _accounts(fleet: JobHandle) -> tuple[list[tuple[AccountRef, tuple[str, ...]]], frozenset[str]]:
    """Each account with provider pools, with its pool ids; and every provider pool id."""
    with fleet.read() as session:
        pools = session.exec(
            select(Pool.id, Pool.provider_account_id).where(Pool.kind == PoolKind.PROVIDER)
        ).all()
        by_account: dict[str, list[str]] = {}
        for pool_id, account_id in pools:
            if account_id is not None:
                by_account.setdefault(account_id, []).append(pool_id)
        rows = session.exec(
            select(ProviderAccount).where(col(ProviderAccount.id).in_(sorted(by_account)))
        ).all()
        accounts = [(AccountRef.of(a), tuple(sorted(by_account[a.id]))) for a in rows]
    return sorted(accounts, key=lambda item: item[0].id), frozenset(p for p, _ in pools)


def _server_view(server: ProviderServer) -> ServerView:
    return ServerView(server.id, server.name, server.status, server.created, dict(server.labels))


@dataclass
class _Pass:
    """One account's pass: its provider client, the plan, and the recording of results."""

    fleet: JobHandle
    catalog: OfferCatalog
    account: AccountRef
    identity: str
    counts: dict[str, int]
    faults: FaultLog

    def reconcile(
        self, pool_ids: Sequence[str], known_pools: frozenset[str], now: datetime
    ) -> None:
        instances = self._instances(pool_ids)
        provider = self.catalog.open(self.account)
        try:
            servers = [_server_view(s) for s in provider.list_servers({LABEL_FLEET: self.identity})]
            self.counts["servers"] += len(servers)
            named = {s.instance_id for s in servers if s.instance_id}
            plan = plan_account(
                fleet_id=self.identity,
                pool_ids=pool_ids,
                known_pool_ids=known_pools,
                instances=instances,
                servers=servers,
                states=self._states(named - {i.id for i in instances}),
                now=now,
                grace_seconds=self.fleet.settings.provider_delete_grace_seconds,
            )
            self._apply(provider, plan)
        finally:
            provider.close()

    def _instances(self, pool_ids: Sequence[str]) -> list[InstanceView]:
        """Live instances, and deleted ones whose server is not yet known to be gone."""
        cleanup = and_(
            col(Instance.state) == InstanceState.DELETED,
            col(Instance.provider_server_id).is_not(None),
            or_(col(Instance.provider_status).is_(None), col(Instance.provider_status) != SERVER_GONE),
        )  # fmt: skip
        with self.fleet.read() as session:
            rows = session.exec(
                select(Instance).where(
                    col(Instance.pool_id).in_(list(pool_ids)),
                    or_(col(Instance.state).in_(INSTANCE_LIVE), cleanup),
                )
            ).all()
        return [
            InstanceView(
                i.id,
                i.pool_id,
                i.state,
                i.shape.get("offerId"),
                i.provider_server_id,
                i.provider_status,
            )
            for i in rows
        ]

    def _states(self, instance_ids: Iterable[str]) -> dict[str, str]:
        wanted = sorted(instance_ids)
        if not wanted:
            return {}
        states: dict[str, str] = {}
        with self.fleet.read() as session:
            for chunk in id_chunks(wanted):
                rows = session.exec(
                    select(Instance.id, Instance.state).where(col(Instance.id).in_(chunk))
                ).all()
                states.update(rows)
        return states

    def _apply(self, provider: ProviderImpl, plan: ProviderPlan) -> None:
        self.counts["waiting"] += len(plan.waits)
        for record in plan.records:
            item = Item("instance", record.instance_id)
            if self._step(item, self._settle, provider, record.instance_id, record.server_id,
                          record.status):  # fmt: skip
                self.counts["adopted" if record.adopted else "recorded"] += 1
        for stuck in plan.stuck:
            mark_problem(self.fleet, stuck.instance_id, stuck.reason, stuck.message)
            self.counts["failed"] += 1
        for create in plan.creates[:MAX_CREATES_PER_PASS]:
            self._step(Item("instance", create.instance_id), self._create, provider, create)
        for delete in plan.deletes:
            self._step(_delete_item(delete), self._delete, provider, delete)
        self.counts["forgotten"] += forget_servers(
            self.fleet, [f.instance_id for f in plan.forgets]
        )

    def _step(self, item: Item, step: Callable[..., bool | None], *args: Any) -> bool:
        """One server's step; a failure is kept on its item and the pass goes on. True if it did its work."""
        try:
            done = step(*args)
        except ProviderRateLimitedError:
            raise
        except Exception as error:
            if ends_the_run(error):
                raise
            self.faults.record(item, error)
            return False
        if done is not False:
            self.faults.forget(item)
        return True

    def _create(self, provider: ProviderImpl, action: Create) -> bool:
        """Create (or find) the instance's server and record it; False when it could not be made."""
        try:
            region = choose_region(self.catalog.offers(self.account), action.offer_id)
            if region is None:
                message = f"offer {action.offer_id!r} is not available in any region now"
                mark_problem(self.fleet, action.instance_id, "OfferUnavailable", message)
                self.counts["failed"] += 1
                return False
            server = self._create_or_find(provider, action, region)
        except ProviderRateLimitedError:
            raise
        except FleetError as error:
            if ends_the_run(error):
                raise
            self._create_failed(action, error)
            return False
        self.counts["created"] += 1
        self._settle(provider, action.instance_id, server.id, server.status)
        return True

    def _create_or_find(
        self, provider: ProviderImpl, action: Create, region: str
    ) -> ProviderServer:
        """Create the server; on a name clash, the server of that name if it carries our labels."""
        try:
            return provider.create_server(
                action.name, action.offer_id, IMAGE, region, action.labels
            )
        except ProviderRateLimitedError:
            raise
        except ConflictError as clash:
            if clash.details.get("providerCode") != "uniqueness_error":
                raise
            found = provider.get_server_by_name(action.name)
            if found is None or any(found.labels.get(k) != v for k, v in action.labels.items()):
                raise ConflictError(
                    f"a server named {action.name!r} exists without this instance's labels",
                    {"name": action.name, "providerCode": "uniqueness_error"},
                ) from clash
            return found

    def _create_failed(self, action: Create, error: FleetError) -> None:
        """Write why on the instance; an unknown outcome is settled by the next pass's listing."""
        unknown = error.details.get("outcome") == "unknown" or error.code == "PROVIDER_UNAVAILABLE"
        self.counts["unknown" if unknown else "failed"] += 1
        reason = "ProviderUnavailable" if unknown else "CreateFailed"
        mark_problem(self.fleet, action.instance_id, reason, f"{error.code}: {error.message}")
        self.faults.record(Item("instance", action.instance_id), error, mark=False, count=False)

    def _settle(
        self, provider: ProviderImpl, instance_id: str, server_id: str, status: str
    ) -> None:
        """Record the server on its instance; if the instance was deleted meanwhile, delete the server."""
        if record_server(self.fleet, instance_id, server_id, status):
            return
        self.counts["raced"] += 1
        self._delete(provider, Delete(server_id, "", instance_id, "instance-deleted"))

    def _delete(self, provider: ProviderImpl, action: Delete) -> None:
        """Delete the server (gone already is as good); a refusal raises, for _step to keep."""
        try:
            provider.delete_server(action.server_id)
        except NotFoundError:
            pass  # already gone: the same outcome
        else:
            self.counts["deleted"] += 1
        if action.instance_id is not None and action.reason == "instance-deleted":
            self.counts["forgotten"] += forget_servers(self.fleet, [action.instance_id])


def _delete_item(action: Delete) -> Item:
    """Whose fault a failed delete is: the instance's, or the orphan server's."""
    if action.instance_id is not None:
        return Item("instance", action.instance_id)
    return Item("server", action.server_id)


def choose_region(offers: Sequence[Offer], offer_id: str) -> str | None:
    """Where to create a server of this offer: the cheapest region selling it now (ties by name)."""
    selling = [o for o in offers if o.id == offer_id and o.available]
    if not selling:
        return None
    return min(selling, key=lambda o: (o.deprecated, o.price_per_hour, o.region)).region


__all__ = ["IMAGE", "choose_region", "fleet_id", "run_reconcile"]
