"""Property: a plan without errors applies, and an applied document plans no changes, on both engines.

Generated FleetConfigs (tenants, a provider account on the fake provider, hosted and provider
pools, hosts, flavors, quotas, ratios that clamp, spares above 10, labels, offers) and generated
edits (sections dropped, objects renamed, moved or removed, ratios changed). Some start from
objects made through the API (adopted), some hosts report inventories, and tenants make
instances between applies. Each document goes through what `fleet apply -f FILE` runs: the
loader, a plan, the operator's approval of the plan shown (or a saved plan), and the apply
under the lock. Then:

- a plan without errors applies, and a second plan of the same document shows no changes;
- a plan with errors is refused by apply, and the state is as it was.

The capacity figures a plan prints are not judged here (tests/fleetconfig/
test_plan_api_agreement.py compares them with what vps.hosts stores). Both runs are
derandomized, so CI sees the same examples every time; BCFLEET_PROPERTY_EXAMPLES changes how
many (40 by default, four times that under `scripts/check --full`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlmodel import SQLModel

from bcfleet.clock import FakeClock
from bcfleet.errors import FleetError, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.reconcile.apply import Approved, apply, make_plan, observe_state, plan_json
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.reconcile.model import DesiredFleet
from bcfleet.reconcile.render import render_text
from bcfleet.reconcile.saved import SavedPlan, approved_from
from bcfleet.store.engine import make_engine
from tests.support.builders import OP, inventory
from tests.support.fleet import T0, open_fleet

Doc = dict[str, Any]
TOKEN_ENVS = ("BCFLEET_PROPERTY_TOKEN", "BCFLEET_PROPERTY_TOKEN_2")  # both set to TOKEN
TOKEN = "hc-property-token"
ENDPOINT = "<fake-provider>"  # replaced by the fake provider's URL when the document is written

TENANTS = ("acme", "globex", "initech")
POOLS = ("p1", "p2", "p3")
SIZES = ("small", "medium", "large", "xlarge")
RATIOS = (0.05, 0.001, 0.1, 0.5, 1 / 3, 1, 1.5, 2, 2.0, 3.25, 100, 150, 1e3)  # clamped to 0.1..100
OFFERS = ("cx23", "cx33", "cx22")  # cx22 is deprecated: a warning, not an error
LABELS = (
    {},
    {"bc.dev/cap.instance.placement": "true"},
    {"rack": "r1", "zone": "a"},
    {"example.com/team": "", "Tier": "Gold.1"},
)
PLACEMENTS = (
    None,
    {},
    {"numaAffine": False},
    {"pinned": True, "hugepageSizeBytes": 2097152},
    {"numaAffine": True, "pinned": False, "hugepageSizeBytes": 1073741824},
)
NAMES = ("Acme Corp", "Café Ünïcode GmbH", "  spaced  ")

BASE_EXAMPLES = int(os.environ.get("BCFLEET_PROPERTY_EXAMPLES", "40"))


# ---------------------------------------------------------------------------
# Documents


def _subset(draw: st.DrawFn, items: list[str] | tuple[str, ...]) -> list[str]:
    return draw(st.lists(st.sampled_from(list(items)), unique=True)) if items else []


def _whole(draw: st.DrawFn, low: int, high: int) -> int | float:
    """A whole number, sometimes written 2.0 (JSON Schema's integer, YAML's float)."""
    value = draw(st.integers(low, high))
    return float(value) if draw(st.integers(0, 4)) == 0 else value


def _overcommit(draw: st.DrawFn) -> dict[str, float]:
    keys = _subset(draw, ("vcpu", "memoryGiB", "diskGiB"))  # only memoryGiB: the rest read 1
    return {key: draw(st.sampled_from(RATIOS)) for key in keys}


def _policy(draw: st.DrawFn) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if draw(st.booleans()):
        policy["overcommit"] = _overcommit(draw)
    if draw(st.booleans()):
        keys = _subset(draw, ("vcpu", "memoryGiB", "diskGiB"))
        policy["hostReserve"] = {key: _whole(draw, 0, 16) for key in keys}
    return policy


def _pool(draw: st.DrawFn, name: str, tenants: list[str], accounts: bool) -> Doc:
    kind = draw(st.sampled_from(["vps-host", "provider"])) if accounts else "vps-host"
    pool: Doc = {"name": name, "kind": kind}
    owner = "root"
    if tenants and draw(st.integers(0, 3 if kind == "vps-host" else 7)) == 0:
        owner = pool["owner"] = draw(st.sampled_from(tenants))  # a provider pool: refused
    elif draw(st.booleans()):
        pool["owner"] = "root"
    offered = [t for t in _subset(draw, tenants) if t != owner]
    if offered or draw(st.booleans()):
        pool["offeredTo"] = offered
    if kind == "provider":
        pool["providerAccount"] = "hz"
        return pool
    gpu_model = draw(st.sampled_from([None, "L40S", "H100"]))
    if gpu_model is not None:
        pool["gpuModel"] = gpu_model
    policy = _policy(draw)
    if policy or draw(st.booleans()):
        pool["policy"] = policy
    return pool


def _host(draw: st.DrawFn, name: str, pool: str) -> Doc:
    host: Doc = {"name": name, "pool": pool}
    labels = draw(st.sampled_from(LABELS))
    if labels or draw(st.booleans()):
        host["labels"] = dict(labels)
    if draw(st.booleans()):
        host["tenantControlled"] = draw(st.booleans())
    return host


def _flavor(draw: st.DrawFn, name: str, pool: Doc) -> Doc:
    flavor: Doc = {
        "pool": pool["name"],
        "name": name,
        "vcpu": _whole(draw, 1, 8),
        "memoryGiB": _whole(draw, 1, 64),
        "diskGiB": draw(st.sampled_from([10, 40, 200])),
    }
    if pool["kind"] == "provider":
        flavor["offerId"] = draw(st.sampled_from(OFFERS))
        return flavor
    gpus = draw(st.sampled_from([None, 0, 1, 1.0]))
    if gpus is not None:
        flavor["gpus"] = gpus
    placement = draw(st.sampled_from(PLACEMENTS))
    if placement is not None:
        flavor["placement"] = dict(placement)
    return flavor


def _quota(draw: st.DrawFn, tenant: str, pool: str) -> Doc:
    limits = _subset(draw, ("vcpu", "memoryGiB", "diskGiB", "gpu"))
    return {"tenant": tenant, "pool": pool} | {k: _whole(draw, 0, 64) for k in limits}


def _sizes(draw: st.DrawFn) -> dict[str, Doc]:
    sizes: dict[str, Doc] = {}
    for size in SIZES:
        choice = draw(st.sampled_from(["out", "empty", "on", "off", "spares"]))
        if choice == "empty":
            sizes[size] = {}
        elif choice == "on":
            sizes[size] = {"enabled": True, "spares": draw(st.integers(0, 3))}
        elif choice == "off":  # spares of a size that is off are kept, not run
            sizes[size] = draw(
                st.sampled_from([{"enabled": False}, {"enabled": False, "spares": 2}])
            )
        elif choice == "spares":
            sizes[size] = {"spares": draw(st.sampled_from([0, 1, 2.0, 10, 11, 15, 1000]))}
    return sizes


def _compute(draw: st.DrawFn, tenant: str, pools: list[Doc]) -> Doc:
    settings_: Doc = {"tenant": tenant}
    usable = [p["name"] for p in pools if p["kind"] == "vps-host" and _may_use(p, tenant)]
    if usable and draw(st.booleans()):
        settings_["serverlessPool"] = draw(st.sampled_from(usable))
    sizes = _sizes(draw)
    if sizes or draw(st.booleans()):
        settings_["sizes"] = sizes
    on = [s for s in SIZES if (sizes.get(s) or {}).get("enabled", True)]
    if not on:  # every size off: the settings would have no default to run
        sizes["medium"], on = {}, ["medium"]
    if draw(st.booleans()) or "medium" not in on:
        settings_["defaultSize"] = draw(st.sampled_from(on))
    return settings_


def _may_use(pool: Doc, tenant: str) -> bool:
    return tenant == pool.get("owner", "root") or tenant in pool.get("offeredTo", [])


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    """A valid FleetConfig as a mapping; sections may be missing or empty."""
    tenants = _subset(draw, TENANTS)
    doc: Doc = {"apiVersion": "bcfleet.dev/v1", "kind": "FleetConfig"}
    declared: list[Doc] = [{"id": "root"}] if draw(st.booleans()) else []
    for tenant in tenants:
        name = draw(st.sampled_from([None, tenant.upper(), *NAMES]))
        declared.append({"id": tenant} if name is None else {"id": tenant, "name": name})
    doc["tenants"] = declared
    accounts = draw(st.booleans())
    if accounts:
        doc["providerAccounts"] = [
            {"name": "hz", "provider": "hetzner", "tokenEnv": TOKEN_ENVS[0], "endpoint": ENDPOINT}
        ]
    pools = [_pool(draw, name, tenants, accounts) for name in POOLS[: draw(st.integers(0, 3))]]
    doc["pools"] = pools
    hosted = [p["name"] for p in pools if p["kind"] == "vps-host"]
    count = draw(st.integers(0, 3)) if hosted else 0
    doc["hosts"] = [_host(draw, f"h{i}", draw(st.sampled_from(hosted))) for i in range(count)]
    count = draw(st.integers(0, 4)) if pools else 0
    doc["flavors"] = [_flavor(draw, f"f{i}", draw(st.sampled_from(pools))) for i in range(count)]
    pairs = [(t, p["name"]) for p in pools for t in tenants if _may_use(p, t)]
    doc["quotas"] = [_quota(draw, t, p) for t, p in _subset_pairs(draw, pairs)]
    doc["compute"] = [_compute(draw, t, pools) for t in _subset(draw, tenants)]
    for section in ("tenants", "pools", "hosts", "flavors", "quotas", "compute"):
        if not doc[section] and draw(st.booleans()):
            del doc[section]  # left out rather than empty
    return doc


def _subset_pairs(draw: st.DrawFn, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []


# ---------------------------------------------------------------------------
# Edits: each changes the document; `consistent` then drops what no longer resolves.

Edit = Callable[[st.DrawFn, Doc], str]


def _items(doc: Doc, section: str) -> list[Doc]:
    items: list[Doc] = doc.get(section) or []
    return items


def _drop_section(draw: st.DrawFn, doc: Doc) -> str:
    section = draw(st.sampled_from(["tenants", "providerAccounts", "pools", "hosts", "flavors",
                                    "quotas", "compute"]))  # fmt: skip
    doc.pop(section, None)
    return f"drop {section}"


def _rename_tenant(draw: st.DrawFn, doc: Doc) -> str:
    tenants = [t for t in _items(doc, "tenants") if t["id"] != "root"]
    if not tenants:
        return "nothing to rename"
    tenant = draw(st.sampled_from(tenants))
    old, new = tenant["id"], f"{tenant['id']}-two"
    tenant["id"] = new
    for pool in _items(doc, "pools"):
        if pool.get("owner") == old:
            pool["owner"] = new
        pool["offeredTo"] = [new if t == old else t for t in pool.get("offeredTo", [])]
    for item in _items(doc, "quotas") + _items(doc, "compute"):
        if item["tenant"] == old:
            item["tenant"] = new
    return f"rename tenant {old} -> {new}"


def _rename_pool(draw: st.DrawFn, doc: Doc) -> str:
    pools = _items(doc, "pools")
    if not pools:
        return "nothing to rename"
    pool = draw(st.sampled_from(pools))
    old, new = pool["name"], f"{pool['name']}.two"
    pool["name"] = new
    for item in _items(doc, "hosts") + _items(doc, "flavors") + _items(doc, "quotas"):
        if item["pool"] == old:
            item["pool"] = new
    for item in _items(doc, "compute"):
        if item.get("serverlessPool") == old:
            item["serverlessPool"] = new
    return f"rename pool {old} -> {new}"


def _rename(section: str) -> Edit:
    def edit(draw: st.DrawFn, doc: Doc) -> str:
        items = _items(doc, section)
        if not items:
            return "nothing to rename"
        item = draw(st.sampled_from(items))
        item["name"] = f"{item['name']}-two"
        return f"rename {section} {item['name']}"

    return edit


def _remove(section: str) -> Edit:
    def edit(draw: st.DrawFn, doc: Doc) -> str:
        items = _items(doc, section)
        if not items:
            return "nothing to remove"
        index = draw(st.integers(0, len(items) - 1))
        removed = items.pop(index)
        return f"remove {section} {removed}"

    return edit


def _change_policy(draw: st.DrawFn, doc: Doc) -> str:
    pools = [p for p in _items(doc, "pools") if p["kind"] == "vps-host"]
    if not pools:
        return "no hosted pool"
    pool = draw(st.sampled_from(pools))
    pool["policy"] = _policy(draw)
    return f"policy of {pool['name']}: {pool['policy']}"


def _move_host(draw: st.DrawFn, doc: Doc) -> str:
    hosted = [p["name"] for p in _items(doc, "pools") if p["kind"] == "vps-host"]
    hosts = _items(doc, "hosts")
    if not hosts or not hosted:
        return "no host to move"
    host = draw(st.sampled_from(hosts))
    host["pool"] = draw(st.sampled_from(hosted))
    host["labels"] = dict(draw(st.sampled_from(LABELS)))
    return f"host {host['name']} to {host['pool']}, labels {host['labels']}"


def _reoffer(draw: st.DrawFn, doc: Doc) -> str:
    pools = _items(doc, "pools")
    tenants = [t["id"] for t in _items(doc, "tenants") if t["id"] != "root"]
    if not pools:
        return "no pool"
    pool = draw(st.sampled_from(pools))
    pool["offeredTo"] = [t for t in _subset(draw, tenants) if t != pool.get("owner", "root")]
    return f"offer {pool['name']} to {pool['offeredTo']}"


def _reshape_flavor(draw: st.DrawFn, doc: Doc) -> str:
    flavors = _items(doc, "flavors")
    pools = {p["name"]: p for p in _items(doc, "pools")}
    if not flavors:
        return "no flavor"
    index = draw(st.integers(0, len(flavors) - 1))
    old = flavors[index]
    if old["pool"] in pools:
        flavors[index] = _flavor(draw, old["name"], pools[old["pool"]])
    return f"reshape flavor {flavors[index]}"


def _change_compute(draw: st.DrawFn, doc: Doc) -> str:
    tenants = [t["id"] for t in _items(doc, "tenants") if t["id"] != "root"]
    if not tenants:
        return "no tenant"
    tenant = draw(st.sampled_from(tenants))
    others = [c for c in _items(doc, "compute") if c["tenant"] != tenant]
    doc["compute"] = [*others, _compute(draw, tenant, _items(doc, "pools"))]
    return f"compute of {tenant}: {doc['compute'][-1]}"


def _change_quota(draw: st.DrawFn, doc: Doc) -> str:
    quotas = _items(doc, "quotas")
    if not quotas:
        return "no quota"
    index = draw(st.integers(0, len(quotas) - 1))
    quotas[index] = _quota(draw, quotas[index]["tenant"], quotas[index]["pool"])
    return f"quota {quotas[index]}"


def _change_owner(draw: st.DrawFn, doc: Doc) -> str:
    pools = _items(doc, "pools")
    tenants = [t["id"] for t in _items(doc, "tenants")]
    if not pools or not tenants:
        return "no pool"
    pool = draw(st.sampled_from(pools))
    pool["owner"] = draw(st.sampled_from(tenants))
    pool["offeredTo"] = [t for t in pool.get("offeredTo", []) if t != pool["owner"]]
    return f"owner of {pool['name']}: {pool['owner']}"  # a plan error unless unchanged


def _replace_all(draw: st.DrawFn, doc: Doc) -> str:
    fresh = draw(documents())
    doc.clear()
    doc.update(fresh)
    return "another document"


def _rename_tenant_display(draw: st.DrawFn, doc: Doc) -> str:
    tenants = _items(doc, "tenants")
    if not tenants:
        return "no tenant"
    tenant = draw(st.sampled_from(tenants))
    name = draw(st.sampled_from([None, tenant["id"], *NAMES]))
    if name is None:
        tenant.pop("name", None)
    else:
        tenant["name"] = name
    return f"tenant {tenant['id']} named {name}"


def _move_account(draw: st.DrawFn, doc: Doc) -> str:
    accounts = _items(doc, "providerAccounts")
    if not accounts:
        return "no account"
    accounts[0]["tokenEnv"] = draw(st.sampled_from(TOKEN_ENVS))
    return f"account {accounts[0]}"


def _add(draw: st.DrawFn, doc: Doc) -> str:
    pools = _items(doc, "pools")
    hosted = [p["name"] for p in pools if p["kind"] == "vps-host"]
    choice = draw(st.sampled_from(["tenant", "host", "flavor", "quota"]))
    if choice == "tenant":
        doc["tenants"] = [*_items(doc, "tenants"), {"id": "umbrella"}]
    elif choice == "host" and hosted:
        doc["hosts"] = [*_items(doc, "hosts"), _host(draw, "h-new", draw(st.sampled_from(hosted)))]
    elif choice == "flavor" and pools:
        doc["flavors"] = [
            *_items(doc, "flavors"),
            _flavor(draw, "f-new", draw(st.sampled_from(pools))),
        ]
    elif choice == "quota" and pools:
        tenants = [t["id"] for t in _items(doc, "tenants")]
        pairs = [(t, p["name"]) for p in pools for t in tenants if _may_use(p, t)]
        taken = {(q["tenant"], q["pool"]) for q in _items(doc, "quotas")}
        free = [pair for pair in pairs if pair not in taken]
        if free:
            doc["quotas"] = [*_items(doc, "quotas"), _quota(draw, *draw(st.sampled_from(free)))]
    return f"add a {choice}"


EDITS: tuple[Edit, ...] = (
    _drop_section,
    _drop_section,
    _rename_tenant,
    _rename_pool,
    _rename("hosts"),
    _rename("flavors"),
    _rename_tenant_display,
    _remove("tenants"),
    _remove("pools"),
    _remove("hosts"),
    _remove("flavors"),
    _remove("quotas"),
    _remove("compute"),
    _change_policy,
    _change_policy,
    _change_policy,
    _move_host,
    _move_host,
    _reoffer,
    _reoffer,
    _reshape_flavor,
    _reshape_flavor,
    _change_compute,
    _change_compute,
    _change_compute,
    _change_quota,
    _change_quota,
    _change_owner,
    _move_account,
    _add,
    _add,
    _replace_all,
)


def consistent(doc: Doc) -> Doc:
    """The document with every reference to something it no longer declares dropped."""
    tenants = {"root"} | {t["id"] for t in _items(doc, "tenants")}
    accounts = {a["name"] for a in _items(doc, "providerAccounts")}
    pools = [
        p
        for p in _items(doc, "pools")
        if p.get("owner", "root") in tenants
        and (p["kind"] != "provider" or p["providerAccount"] in accounts)
    ]
    for pool in pools:
        if "offeredTo" in pool:
            pool["offeredTo"] = [t for t in pool["offeredTo"] if t in tenants]
    by_name = {p["name"]: p for p in pools}
    out: Doc = dict(doc)
    if "pools" in doc:
        out["pools"] = pools
    if "hosts" in doc:
        out["hosts"] = [
            h for h in _items(doc, "hosts") if by_name.get(h["pool"], {}).get("kind") == "vps-host"
        ]
    if "flavors" in doc:
        out["flavors"] = [f for f in _items(doc, "flavors") if f["pool"] in by_name]
    if "quotas" in doc:
        out["quotas"] = [
            q for q in _items(doc, "quotas") if q["tenant"] in tenants and q["pool"] in by_name
        ]
    if "compute" in doc:
        kept = [c for c in _items(doc, "compute") if c["tenant"] in tenants]
        for item in kept:
            pool = by_name.get(item.get("serverlessPool", ""))
            if pool is not None and not (
                pool["kind"] == "vps-host" and _may_use(pool, item["tenant"])
            ):
                pool = None
            if pool is None:
                item.pop("serverlessPool", None)
        out["compute"] = kept
    return out


@st.composite
def edits(draw: st.DrawFn, start: Doc) -> list[tuple[str, Doc]]:
    """One to four edits in a row, each applied to the one before; with what each did."""
    doc = json.loads(json.dumps(start))
    done: list[tuple[str, Doc]] = []
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.sampled_from(EDITS))(draw, doc)
        doc = consistent(doc)
        done.append((what, json.loads(json.dumps(doc))))
    return done


@dataclass(frozen=True)
class Scenario:
    start: Doc
    steps: list[tuple[str, Doc]]  # each edit, and the document after it
    instances: list[tuple[int, int]]  # (tenant, flavor) indices: instances made after the start
    inventories: bool  # the declared hosts report an inventory, and vps.hosts places instances
    premade: bool  # tenants, hosted pools, their flavors and spares made through the API first
    saved: bool  # applied as a saved plan (`fleet plan --out`, `fleet apply plan.json`)
    allow_empty: bool  # the edits' --allow-empty


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    start = draw(documents())
    instances = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), max_size=3))
    inventories, premade, saved, allow_empty = (draw(st.booleans()) for _ in range(4))
    steps = draw(edits(start))
    return Scenario(start, steps, instances, inventories, premade, saved, allow_empty)


# ---------------------------------------------------------------------------
# Running a document as `fleet apply -f FILE` does


def text_of(doc: Doc, endpoint: str) -> str:
    """The document as YAML (JSON is YAML 1.2), the fake provider's URL filled in."""
    return json.dumps(doc, indent=2).replace(ENDPOINT, endpoint) + "\n"


def load(fleet: Fleet, text: str) -> DesiredFleet:
    """The loader `fleet plan` and `fleet apply` call, with the fleet's default host reserve."""
    return load_fleetconfig_text(text, file="fleet.yaml", host_reserve=fleet.settings.host_reserve)


def applies_and_settles(fleet: Fleet, text: str, *, saved: bool, allow_empty: bool) -> bool:
    """Plan, approve, apply; True when the document is now the state (it planned no errors)."""
    desired = load(fleet, text)
    shown = make_plan(fleet, OP, desired, allow_empty=allow_empty)
    note(render_text(shown))
    if saved and not shown.errors:  # `fleet plan --out` saves only a plan without errors
        document = SavedPlan(
            file="fleet.yaml", text=text, plan=plan_json(shown), allow_empty=allow_empty
        )
        approved = approved_from(document, host_reserve=fleet.settings.host_reserve)
    else:  # shown at the prompt, and the operator said yes
        approved = Approved(desired, plan_json(shown), allow_empty=allow_empty)
    if shown.errors:
        before = observe_state(fleet, OP)
        with pytest.raises(FleetError) as refused:
            apply(fleet, OP, approved)
        assert refused.value.code == shown.errors[0].code, render_text(shown)
        assert observe_state(fleet, OP) == before, "a refused apply changed the state"
        return False
    done = apply(fleet, OP, approved)
    assert not done.replanned
    again = make_plan(fleet, OP, desired, allow_empty=allow_empty)
    assert [a.address for a in again.changes] == [], render_text(again)
    assert again.errors == (), render_text(again)
    return True


def empty_pg(url: str) -> None:
    """Every row of the PostgreSQL test database deleted, children first: for tables this small
    DELETE takes a tenth of TRUNCATE's time, which matters once per generated example."""
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            for table in reversed(SQLModel.metadata.sorted_tables):
                connection.execute(table.delete())
            connection.execute(text("SELECT setval('bcfleet_state_revision', 1, false)"))
    finally:
        engine.dispose()


@contextmanager
def empty_fleet(url: str | None) -> Iterator[Fleet]:
    """A fleet on an empty database: a new SQLite file, or the PostgreSQL test database emptied."""
    with tempfile.TemporaryDirectory() as tmp:
        if url is None:
            url = f"sqlite:///{tmp}/fleet.db"
        else:
            empty_pg(url)
        fleet = open_fleet(url, FakeClock(T0))
        try:
            yield fleet
        finally:
            fleet.close()


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeHetzner]:
    """The fake provider the documents' account points at, its token in the environment."""
    with pytest.MonkeyPatch.context() as patch, FakeHetzner(token=TOKEN) as fake:
        for name in TOKEN_ENVS:
            patch.setenv(name, TOKEN)
        yield fake


ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def run_scenario(url: str | None, endpoint: str, scenario: Scenario) -> None:
    with empty_fleet(url) as fleet:
        note(f"start:\n{text_of(scenario.start, endpoint)}")
        try:
            load(fleet, text_of(scenario.start, endpoint))
        except InvalidInputError:
            event("a start that validate refuses")
            return
        if scenario.premade:
            make_through_the_api(fleet, scenario.start)
        assert applies_and_settles(
            fleet, text_of(scenario.start, endpoint), saved=scenario.saved, allow_empty=True
        )
        if scenario.inventories:
            report_inventories(fleet, scenario.start)
        make_instances(fleet, scenario.start, scenario.instances)
        if scenario.inventories:
            assert fleet.api.jobs.run(OP, "vps.hosts")["outcome"] == "ok"
        for what, doc in scenario.steps:
            text = text_of(doc, endpoint)
            note(f"edit: {what}\n{text}")
            try:
                load(fleet, text)
            except InvalidInputError:
                event("an edit that validate refuses")
                continue
            if applies_and_settles(
                fleet, text, saved=scenario.saved, allow_empty=scenario.allow_empty
            ):
                event("an edit applied")
            else:
                event("an edit that plans errors")


def make_through_the_api(fleet: Fleet, doc: Doc) -> None:
    """What an operator made with the CLI before writing the FleetConfig: the apply adopts it."""
    api = fleet.api
    made = [
        lambda t=t: api.tenants.create(OP, t["id"])
        for t in _items(doc, "tenants")
        if t["id"] != "root"
    ]
    for pool in _items(doc, "pools"):
        if pool["kind"] != "vps-host":
            continue
        owner, policy = pool.get("owner", "root"), pool.get("policy") or {}
        made.append(
            lambda p=pool, o=owner, c=policy: api.pools.create(
                OP, tenant_id=o, name=p["name"], kind="vps-host", gpu_model=p.get("gpuModel"),
                overcommit=c.get("overcommit"), host_reserve=_ints(c.get("hostReserve")),
            )
        )  # fmt: skip
        made += [
            lambda f=f, o=owner: api.flavors.create(
                OP, tenant_id=o, pool_id=f["pool"], name=f["name"], vcpu=int(f["vcpu"]),
                memory_gib=int(f["memoryGiB"]), disk_gib=int(f["diskGiB"]),
            )
            for f in _items(doc, "flavors")
            if f["pool"] == pool["name"]
        ]  # fmt: skip
    made += [
        lambda c=c: api.settings.compute_set(OP, tenant_id=c["tenant"], spares={"small": 3})
        for c in _items(doc, "compute")
    ]
    for make in made:
        try:
            make()
            event("an object made through the API")
        except FleetError as refused:
            event(f"an object the API refused: {refused.code}")


def _ints(values: dict[str, Any] | None) -> dict[str, int] | None:
    return None if values is None else {key: int(value) for key, value in values.items()}


def report_inventories(fleet: Fleet, doc: Doc) -> None:
    """What each declared host's agent would report: 8 CPUs, 32 GiB, 500 GiB of disk."""
    for host in _items(doc, "hosts"):
        fleet.api.hosts.report(
            OP, host=host["name"], inventory=inventory(cpus=8, memory_gib=32, disk_gib=500)
        )
    event("inventories reported")


def make_instances(fleet: Fleet, doc: Doc, wanted: list[tuple[int, int]]) -> None:
    """Tenants' instances of declared flavors, made through the API between applies: what the
    state holds beside a FleetConfig (flavors then archive, pools and hosts are in use)."""
    tenants = ["root", *(t["id"] for t in _items(doc, "tenants") if t["id"] != "root")]
    pools = {p["name"]: p for p in _items(doc, "pools")}
    flavors = _items(doc, "flavors")
    for tenant_index, flavor_index in wanted:
        if not flavors:
            return
        tenant = tenants[tenant_index % len(tenants)]
        flavor = flavors[flavor_index % len(flavors)]
        if not _may_use(pools[flavor["pool"]], tenant):
            continue
        try:
            fleet.api.instances.create(
                OP, tenant_id=tenant, pool_id=flavor["pool"], flavor=flavor["name"]
            )
            event("an instance made")
        except FleetError as refused:
            event(f"an instance refused: {refused.code}")


def _engine_url(request: pytest.FixtureRequest, engine: str) -> str | None:
    return None if engine == "sqlite" else str(request.getfixturevalue("pg_database"))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_plan_without_errors_applies_and_then_plans_no_changes(
    request: pytest.FixtureRequest, engine: str, provider: FakeHetzner
) -> None:
    url = _engine_url(request, engine)

    @settings(
        max_examples=BASE_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(scenarios())
    def check(scenario: Scenario) -> None:
        run_scenario(url, provider.url, scenario)

    check()


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_many_plans_without_errors_apply_and_then_plan_no_changes(
    request: pytest.FixtureRequest, engine: str, provider: FakeHetzner
) -> None:
    url = _engine_url(request, engine)

    @settings(
        max_examples=BASE_EXAMPLES * 4,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(scenarios())
    def check(scenario: Scenario) -> None:
        run_scenario(url, provider.url, scenario)

    check()
