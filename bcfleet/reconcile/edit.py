"""Edit part of a FleetConfig (the console's `e` and `n`): a fragment merged into the state, a scoped plan.

An edited document declares one object (or a few), not the whole fleet. Planned
as it stands it would delete every managed object it leaves out, so the rule is:

- the fragment is merged into the state written as a FleetConfig (``state_sections``:
  every object the state holds, archived flavors left out): an item of the fragment
  replaces the state's item with the same key (a pool by name, a flavor by pool and
  name, a quota by tenant and pool …), other items are added. References then resolve
  against the whole fleet, and nothing the fragment leaves out is missing;
- the plan of the merged document is scoped to the fragment (``Scope``): only the
  objects it declares (and, for a pool, its offers) are created, adopted or updated.
  Nothing else is touched, and an edit never deletes anything (delete is its own key).

Problems are reported at the fragment's own line and column; a problem of the state's
items (not the operator's) is left out, since applying touches none of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.reconcile.actions import Plan
from bcfleet.reconcile.attrs import Spec, attributes, desired_entries
from bcfleet.reconcile.checks import meaning_findings
from bcfleet.reconcile.load import _invalid_at, build_desired
from bcfleet.reconcile.model import DesiredFleet, ObservedFleet
from bcfleet.reconcile.schema import fleetconfig_schema, schema_problems
from bcfleet.reconcile.value_checks import value_findings
from bcfleet.reconcile.yamldoc import ParsedDocument, Problem, YamlProblems, parse_yaml

API_VERSION = "bcfleet.dev/v1"
KIND = "FleetConfig"
SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "tenants": ("id",),
    "providerAccounts": ("name",),
    "pools": ("name",),
    "hosts": ("name",),
    "flavors": ("pool", "name"),
    "quotas": ("tenant", "pool"),
    "compute": ("tenant",),
}
"""Each FleetConfig section, and the fields that name one of its items."""
DEFINITIONS = {
    "tenants": "tenant",
    "providerAccounts": "providerAccount",
    "pools": "pool",
    "hosts": "host",
    "flavors": "flavor",
    "quotas": "quota",
    "compute": "compute",
}
"""Section → its item's definition in the FleetConfig schema."""


def _pruned(value: Any) -> Any:
    """Without nulls and empty maps: what a FleetConfig leaves out takes its default."""
    if isinstance(value, Mapping):
        kept = {k: _pruned(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in kept.items() if v != {}}
    return value


def declared_item(section: str, spec: Spec, offered_to: Sequence[str] = ()) -> dict[str, Any]:
    """One item of a FleetConfig section declaring the spec: the plan's attributes with only
    the keys the schema has, nulls and empty lists left out (a pool's offers as offeredTo)."""
    item = _pruned(attributes(spec))
    if section == "pools" and offered_to:
        item["offeredTo"] = [t for t in offered_to if t != item.get("owner")]
    allowed = fleetconfig_schema()["$defs"][DEFINITIONS[section]]["properties"]
    return {k: v for k, v in item.items() if k in allowed and v != []}


def state_sections(observed: ObservedFleet) -> dict[str, list[dict[str, Any]]]:
    """The state written as FleetConfig sections: every object, managed or not, archived
    flavors left out (the tenant root is implicit in every FleetConfig)."""
    offers: dict[str, list[str]] = {}
    for offer in observed.offers:
        offers.setdefault(offer.spec.pool, []).append(offer.spec.tenant)
    return {
        "tenants": [
            declared_item("tenants", t.spec) for t in observed.tenants if t.spec.id != ROOT_TENANT
        ],
        "providerAccounts": [
            declared_item("providerAccounts", a.spec) for a in observed.provider_accounts
        ],
        "pools": [
            declared_item("pools", p.spec, sorted(offers.get(p.spec.name, ())))
            for p in observed.pools
        ],
        "hosts": [declared_item("hosts", h.spec) for h in observed.hosts],
        "flavors": [declared_item("flavors", f.spec) for f in observed.flavors if not f.archived],
        "quotas": [declared_item("quotas", q.spec) for q in observed.quotas],
        "compute": [declared_item("compute", c.spec) for c in observed.compute],
    }


def item_key(section: str, item: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(item.get(field)) for field in SECTION_KEYS[section])


def merged(
    fragment: Mapping[str, Any], state: Mapping[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """The fragment's items first (so a problem's index in a section is the fragment's own),
    then the state's items the fragment does not name."""
    document: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    for section in SECTION_KEYS:
        mine = [i for i in fragment.get(section) or [] if isinstance(i, Mapping)]
        named = {item_key(section, i) for i in mine}
        rest = [i for i in state.get(section, []) if item_key(section, i) not in named]
        if mine or rest:
            document[section] = [*mine, *rest]
    return document


@dataclass(frozen=True)
class Scope:
    """What an edit may change: the addresses its fragment declares, and its pools' offers."""

    addresses: frozenset[str]
    pools: frozenset[str] = frozenset()

    def covers(self, address: str | None) -> bool:
        if address is None or address in self.addresses:
            return True
        return any(address.startswith(f"offer.{pool}.") for pool in self.pools)

    def of(self, result: Plan) -> Plan:
        """The plan with only the actions, warnings and errors within the scope."""
        return replace(
            result,
            actions=tuple(a for a in result.actions if self.covers(a.address)),
            warnings=tuple(w for w in result.warnings if self.covers(w.address)),
            errors=tuple(e for e in result.errors if self.covers(e.address)),
        )


@dataclass(frozen=True)
class Edit:
    """An edited fragment, valid once merged: the merged fleet to plan, and its scope."""

    desired: DesiredFleet
    scope: Scope
    text: str


def load_edit(
    text: str,
    observed: ObservedFleet,
    *,
    file: str = "<edit>",
    host_reserve: HostReserve | None = None,
) -> Edit:
    """Validate an edited fragment merged into the state; INVALID_INPUT with every problem at
    the fragment's ``file:line:column`` (details["errors"], as the loader gives them)."""
    try:
        document = parse_yaml(text)
    except YamlProblems as exc:
        raise _invalid_at(file, ParsedDocument(None), exc.problems) from None
    data = document.data
    if not isinstance(data, Mapping):
        problem = Problem((), "the document must be a mapping of FleetConfig sections")
        raise _invalid_at(file, document, [problem])
    fragment = {"apiVersion": API_VERSION, "kind": KIND, **data}
    problems = schema_problems(fragment)
    if problems:
        raise _invalid_at(file, document, problems)
    whole = merged(fragment, state_sections(observed))
    sizes = {s: len(fragment.get(s) or []) for s in SECTION_KEYS}
    problems = [p for p in schema_problems(whole) + value_findings(whole) if _mine(p, sizes)]
    if not problems:
        problems = [p for p in meaning_findings(whole).errors if _mine(p, sizes)]
    if problems:
        raise _invalid_at(file, document, problems)
    declared = build_desired(fragment, host_reserve=host_reserve)
    scope = Scope(
        frozenset(e.address for e in desired_entries(declared)),
        frozenset(p.name for p in declared.pools),
    )
    desired = replace(
        build_desired(whole, host_reserve=host_reserve),
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )
    return Edit(desired, scope, text)


def _mine(problem: Problem, sizes: Mapping[str, int]) -> bool:
    """Whether a problem of the merged document lies in the fragment's items (or in none)."""
    path = problem.path
    if len(path) < 2 or path[0] not in sizes:
        return True
    index = path[1]
    return not isinstance(index, int) or index < sizes[str(path[0])]
