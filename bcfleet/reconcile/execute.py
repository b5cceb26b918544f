"""Carry out a Plan's actions through the same API the CLI calls; apply runs it in one transaction.

Each action becomes one or two API calls (``fleet.api.flavors.create(…,
managed=True)``, ``set_managed`` to adopt, …), each with its own
authorization, in the plan's order: creations and updates follow dependencies,
removals run afterwards in reverse. Consecutive creations of flavors in one
pool go to ``flavors.create_many`` in batches, which applies the same rules in
one call. Objects are named by the attributes the plan carries, never parsed
from addresses (pool names may contain dots).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bcfleet.api.auth import Credential
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.reconcile.actions import Action, thaw
from bcfleet.reconcile.observed_compute import compute_change

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

Attrs = dict[str, Any]
QUOTA_LIMITS = ("vcpu", "memoryGiB", "diskGiB", "gpu")
BATCH = 500  # flavors per create_many call


def _batch_key(action: Action) -> str | None:
    """The pool of a flavor creation, which batches with its neighbours; None for the rest."""
    if action.type == "flavor" and action.actions == ("create",) and action.after is not None:
        return str(action.after["pool"])
    return None


def batches(actions: Sequence[Action]) -> Iterator[list[Action]]:
    """The actions in order, neighbouring flavor creations of one pool grouped (at most BATCH)."""
    batch: list[Action] = []
    for action in actions:
        key = _batch_key(action)
        if batch and (key is None or key != _batch_key(batch[0]) or len(batch) >= BATCH):
            yield batch
            batch = []
        batch.append(action)
        if key is None:
            yield batch
            batch = []
    if batch:
        yield batch


class Executor:
    """Runs actions against one fleet as one credential; ``owners`` maps pool names to owners."""

    def __init__(self, fleet: ApiHandle, credential: Credential | None, owners: Mapping[str, str]):
        self.api = fleet.api
        self.credential = credential
        self.owners = dict(owners)
        self.warnings: list[str] = []
        self._handlers: dict[str, Callable[[Action, Attrs], None]] = {
            "tenant": self._tenant,
            "providerAccount": self._account,
            "pool": self._pool,
            "offer": self._offer,
            "host": self._host,
            "flavor": self._flavor,
            "quota": self._quota,
            "compute": self._compute,
        }

    def run_all(self, actions: Sequence[Action], between: Callable[[int], None] | None) -> None:
        """Every action in order; ``between(done)`` after each call, with the actions done."""
        done = 0
        for batch in batches([action for action in actions if action.is_change]):
            if len(batch) > 1:
                self._create_flavors(batch)
            else:
                self.run(batch[0])
            done += len(batch)
            if between is not None:
                between(done)

    def _create_flavors(self, batch: list[Action]) -> None:
        pool = str(thaw(batch[0].after)["pool"])
        items = [
            _shape(thaw(action.after)) | {"name": action.after["name"]}
            for action in batch
            if action.after
        ]
        made = self.api.flavors.create_many(
            self.credential,
            tenant_id=self._owner(pool),
            pool_id=pool,
            flavors=items,
            managed=True,
        )
        for body in made["items"]:
            self._note(f"flavor.{pool}.{body['name']}", body)

    def run(self, action: Action) -> None:
        """One action; a FleetError from the API propagates and rolls the whole apply back."""
        if not action.is_change:
            return
        attrs: Attrs = thaw(action.after if action.after is not None else action.before) or {}
        self._handlers[action.type](action, attrs)

    def _note(self, address: str, body: Mapping[str, Any]) -> None:
        """Keep what the API warned about (a deprecated or unchecked offer) for the report."""
        self.warnings.extend(f"{address}: {warning}" for warning in body.get("warnings", []))

    def _owner(self, pool: str) -> str:
        return self.owners.get(pool, ROOT_TENANT)

    def _tenant(self, action: Action, attrs: Attrs) -> None:
        tenants, tenant_id = self.api.tenants, str(attrs["id"])
        if "create" in action.actions:
            tenants.create(self.credential, tenant_id, name=attrs["name"], managed=True)
        if "adopt" in action.actions:
            tenants.set_managed(self.credential, tenant_id)
        if "update" in action.actions:
            tenants.update(self.credential, tenant_id, name=attrs["name"])
        if "delete" in action.actions:
            tenants.delete(self.credential, tenant_id)

    def _account(self, action: Action, attrs: Attrs) -> None:
        accounts = self.api.provider_accounts
        key = {"tenant_id": ROOT_TENANT, "name": attrs["name"]}
        fields = {
            "provider": attrs["provider"],
            "token_env": attrs["tokenEnv"],
            "endpoint": attrs["endpoint"],
        }
        if "create" in action.actions:
            accounts.create(self.credential, **key, **fields, managed=True)
        if "adopt" in action.actions:
            accounts.set_managed(self.credential, **key)
        if "update" in action.actions:
            accounts.update(self.credential, **key, **fields)
        if "delete" in action.actions:
            accounts.delete(self.credential, **key)

    def _pool(self, action: Action, attrs: Attrs) -> None:
        pools, name = self.api.pools, str(attrs["name"])
        owner = str(attrs["owner"])
        policy = attrs["policy"]
        if "create" in action.actions:
            pools.create(
                self.credential,
                tenant_id=owner,
                name=name,
                kind=attrs["kind"],
                gpu_model=attrs["gpuModel"],
                overcommit=policy["overcommit"],
                host_reserve=policy["hostReserve"],
                provider_account=attrs["providerAccount"],
                managed=True,
            )
        if "adopt" in action.actions:
            pools.set_managed(self.credential, tenant_id=owner, pool=name)
        if "update" in action.actions:
            pools.update(
                self.credential,
                tenant_id=owner,
                pool=name,
                gpu_model=attrs["gpuModel"] or "",
                overcommit=policy["overcommit"],
                host_reserve=policy["hostReserve"],
            )
        if "delete" in action.actions:
            pools.delete(self.credential, tenant_id=owner, pool=name)

    def _offer(self, action: Action, attrs: Attrs) -> None:
        """An offer is managed with its pool: adopting one needs no call of its own."""
        pool, tenant = str(attrs["pool"]), str(attrs["tenant"])
        revoke = "delete" in action.actions
        if "create" in action.actions or revoke:
            self.api.pools.offer(
                self.credential, tenant_id=self._owner(pool), pool=pool, to=tenant, revoke=revoke
            )

    def _host(self, action: Action, attrs: Attrs) -> None:
        hosts, name, pool = self.api.hosts, str(attrs["name"]), str(attrs["pool"])
        owner = self._owner(pool)
        if "create" in action.actions:
            hosts.adopt(
                self.credential,
                tenant_id=owner,
                pool=pool,
                name=name,
                labels=dict(attrs["labels"]),
                tenant_controlled=bool(attrs["tenantControlled"]),
                managed=True,
            )
        before = thaw(action.before) or {}
        current_owner = self._owner(str(before.get("pool", pool)))
        if "adopt" in action.actions:
            hosts.set_managed(self.credential, tenant_id=current_owner, host=name)
        if "update" in action.actions:
            hosts.update(
                self.credential,
                tenant_id=current_owner,
                host=name,
                labels=dict(attrs["labels"]),
                tenant_controlled=bool(attrs["tenantControlled"]),
                pool=pool,
            )
        if "delete" in action.actions:
            hosts.remove(self.credential, tenant_id=owner, host=name)

    def _flavor(self, action: Action, attrs: Attrs) -> None:
        flavors, pool = self.api.flavors, str(attrs["pool"])
        key = {"tenant_id": self._owner(pool), "pool_id": pool, "name": attrs["name"]}
        shape = _shape(attrs)
        if "create" in action.actions:
            self._note(
                action.address, flavors.create(self.credential, **key, **shape, managed=True)
            )
        if "adopt" in action.actions:
            flavors.set_managed(self.credential, **key)
        if "update" in action.actions:
            self._note(action.address, flavors.update(self.credential, **key, **shape))
        if "delete" in action.actions or "archive" in action.actions:
            flavors.delete(self.credential, **key)

    def _quota(self, action: Action, attrs: Attrs) -> None:
        quotas = self.api.quotas
        key = {"tenant_id": str(attrs["tenant"]), "pool": str(attrs["pool"])}
        if "delete" in action.actions:
            quotas.clear(self.credential, **key)
            return
        limits = {resource: attrs[resource] for resource in QUOTA_LIMITS}
        quotas.set(self.credential, **key, limits=limits, managed=True)

    def _compute(self, action: Action, attrs: Attrs) -> None:
        """Create, adopt or update: one save naming every size; delete: back to the defaults."""
        if "delete" in action.actions:
            self.api.settings.compute_delete(self.credential, tenant_id=str(attrs["tenant"]))
            return
        self.api.settings.compute_save(
            self.credential,
            tenant_id=str(attrs["tenant"]),
            change=compute_change(attrs),
            managed=True,
        )


def _shape(attrs: Attrs) -> dict[str, Any]:
    """A flavor's plan attributes as the flavors API's keyword arguments (without the name)."""
    return {
        "vcpu": attrs["vcpu"],
        "memory_gib": attrs["memoryGiB"],
        "disk_gib": attrs["diskGiB"],
        "gpus": attrs["gpus"],
        "offer_id": attrs["offerId"],
        "placement": attrs["placement"],
    }
