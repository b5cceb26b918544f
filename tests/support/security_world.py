"""A fleet for the security tests: hostco's pool offered to acme, acme's objects in it, callers.

hostco owns the vps-host pool "shared" (a flavor, a host with GPUs) and offers it to acme
and initech; acme runs an instance and holds a reservation there, and has a webhook, a
service, an index, an environment and a provider account; its webhook has deliveries. globex is unrelated. Every
tenant of KINDS gets a token per role.
"""

from __future__ import annotations

from typing import Any

from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.jobs.webhooks import enqueue
from tests.support.builders import OP, inventory, token

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
KINDS = {"root": "root", "owner": "hostco", "offered": "acme", "unrelated": "globex"}
"""Each kind of caller, relative to the pool and acme's objects, and its tenant."""
ROLES = ("admin", "member", "viewer")


def build_world(fleet: Fleet) -> dict[str, Any]:
    """The objects above, as root sees them, and a token per (kind, role)."""
    api = fleet.api
    for tenant in ("hostco", "acme", "globex", "initech"):
        api.tenants.create(OP, tenant)
    pool = api.pools.create(OP, tenant_id="hostco", name="shared", kind="vps-host",
                            gpu_model="L40S")  # fmt: skip
    for tenant in ("acme", "initech"):
        api.pools.offer(OP, tenant_id="hostco", pool=pool["id"], to=tenant)
    for name, vcpu in (("g1.small", 2), ("g1.medium", 4)):
        api.flavors.create(OP, tenant_id="hostco", pool_id=pool["id"], name=name, vcpu=vcpu,
                           memory_gib=4, disk_gib=40)  # fmt: skip
    host = api.hosts.adopt(OP, tenant_id="hostco", pool=pool["id"], name="shared-h1",
                           labels=PLACEMENT)  # fmt: skip
    api.hosts.report(OP, host="shared-h1", inventory=inventory(cpus=16, gpus=2))
    run_vps_hosts(fleet, fleet.now())
    webhook = api.webhooks.create(OP, tenant_id="acme", url="https://acme.example/hook")
    acme = {
        "webhook": webhook,
        "instance": api.instances.create(OP, tenant_id="acme", pool_id=pool["id"],
                                         flavor="g1.small", name="acme-secret-vm"),
        "reservation": api.reservations.create(OP, tenant_id="acme", pool_id=pool["id"],
                                               gpus=1, duration="1h"),
        "service": api.services.create(OP, tenant_id="acme", workspace="prod", name="web"),
        "index": api.indexes.create(OP, tenant_id="acme", workspace="prod", name="docs"),
        "environment": api.environments.create(OP, tenant_id="acme", name="stg", size="medium"),
        "account": api.provider_accounts.create(OP, tenant_id="acme", name="acme-hz",
                                                provider="hetzner", token_env="HCLOUD_TOKEN"),
    }  # fmt: skip
    acme["token"] = api.iam.create_token(OP, tenant_id="acme", name="acme-bot", role="viewer")
    enqueue(fleet, fleet.now())  # acme's events become deliveries of its webhook
    acme["delivery"] = api.webhooks.deliveries(OP, webhook["id"])["items"][0]
    tokens = {
        (kind, role): token(fleet, tenant, f"{tenant}-{role}", role=role)
        for kind, tenant in KINDS.items()
        for role in ROLES
    }
    return {"pool": pool, "host": host, "acme": acme, "tokens": tokens}
