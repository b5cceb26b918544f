"""The FleetConfig YAML that would declare an object the console shows; pure.

The API's JSON is turned into the spec `fleet plan` compares (reconcile/model.py), whose
attributes (reconcile/attrs.py, the plan's own `after`) are written as one item of the
FleetConfig section, keeping only the keys the FleetConfig schema has, and checked
against that schema. Objects a FleetConfig does not declare say so instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

import yaml

from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.reconcile.attrs import Spec
from bcfleet.reconcile.edit import declared_item
from bcfleet.reconcile.model import (
    FlavorSpec,
    HostSpec,
    Overcommit,
    PoolSpec,
    ProviderAccountSpec,
    QuotaSpec,
    TenantSpec,
    normalize_labels,
    normalize_placement,
)
from bcfleet.reconcile.schema import schema_problems

NOT_DECLARED = "A FleetConfig does not declare {what}: there is no YAML for it."

JSON = Mapping[str, Any]


def _tenant(doc: JSON, _names: Mapping[str, str]) -> Spec:
    return TenantSpec(doc["id"], doc.get("name") or doc["id"])


def _account(doc: JSON, _names: Mapping[str, str]) -> Spec:
    token_env = str(doc.get("tokenEnv") or "")  # an account given its token itself names none
    return ProviderAccountSpec(doc["name"], doc["provider"], token_env, doc.get("endpoint"))


def _pool(doc: JSON, names: Mapping[str, str]) -> Spec:
    """The pool with the policy in force as the API answers it (effectivePolicy: the fleet's
    default reserve under the pool's own), so the YAML plans no change where it is pasted."""
    effective = doc["effectivePolicy"]
    reserve = effective["hostReserve"]
    account = doc.get("providerAccountId")
    return PoolSpec(
        name=doc["name"],
        kind=doc["kind"],
        owner=doc.get("owner") or ROOT_TENANT,
        gpu_model=doc.get("gpuModel"),
        overcommit=Overcommit.of(effective["overcommit"]),
        host_reserve=HostReserve(reserve["vcpu"], reserve["memoryGiB"], reserve["diskGiB"]),
        provider_account=names.get(account, account) if account else None,
    )


def _host(doc: JSON, _names: Mapping[str, str]) -> Spec:
    return HostSpec(
        doc["name"],
        doc["pool"],
        normalize_labels(doc.get("labels")),
        bool(doc.get("tenantControlled")),
    )


def _flavor(doc: JSON, _names: Mapping[str, str]) -> Spec:
    return FlavorSpec(
        pool=doc["pool"],
        name=doc["name"],
        vcpu=int(doc["vcpu"]),
        memory_gib=int(doc["memoryGiB"]),
        disk_gib=int(doc["diskGiB"]),
        gpus=int(doc.get("gpus") or 0),
        offer_id=doc.get("offerId"),
        placement=normalize_placement(doc.get("placement")),
    )


def _quota(doc: JSON, _names: Mapping[str, str]) -> Spec:
    limits = doc.get("limits") or {}
    return QuotaSpec(
        doc["tenantId"],
        doc["pool"],
        vcpu=limits.get("vcpu"),
        memory_gib=limits.get("memoryGiB"),
        disk_gib=limits.get("diskGiB"),
        gpu=limits.get("gpu"),
    )


SECTIONS: dict[str, tuple[str, str, Callable[[JSON, Mapping[str, str]], Spec]]] = {
    "tenant": ("tenants", "tenant", _tenant),
    "providerAccount": ("providerAccounts", "providerAccount", _account),
    "pool": ("pools", "pool", _pool),
    "host": ("hosts", "host", _host),
    "flavor": ("flavors", "flavor", _flavor),
    "quota": ("quotas", "quota", _quota),
}
"""Kind → (FleetConfig section, schema definition, the spec from the API's JSON)."""


class _Dumper(yaml.SafeDumper):
    """Safe YAML that writes a state or kind (a StrEnum member) as its string."""


_Dumper.add_multi_representer(StrEnum, lambda dumper, value: dumper.represent_str(value.value))


def declaration(kind: str | None, doc: JSON, names: Mapping[str, str] | None = None) -> str:
    """The FleetConfig YAML declaring the object (`names`: provider account ids → names),
    or a sentence saying a FleetConfig does not declare objects of this kind."""
    if kind not in SECTIONS:
        what = f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}" if kind else "this object"
        return NOT_DECLARED.format(what=what)
    section, _definition, make = SECTIONS[kind]
    item = declared_item(section, make(doc, names or {}), doc.get("offeredTo") or ())
    whole = {"apiVersion": "bcfleet.dev/v1", "kind": "FleetConfig", section: [item]}
    problems = schema_problems(whole)
    if problems:
        return f"Not declarable as it stands: {problems[0].message}"
    return section_yaml(section, item)


def section_yaml(section: str, item: Mapping[str, Any]) -> str:
    """One item as the FleetConfig section that declares it (`flavors:` and a list of one)."""
    text = yaml.dump(
        {section: [dict(item)]}, Dumper=_Dumper, sort_keys=False, default_flow_style=False
    )
    return text.rstrip()
