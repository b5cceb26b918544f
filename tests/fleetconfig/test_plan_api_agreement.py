"""A FleetConfig plan and the API agree: on a host's capacity under a pool policy, and on SIZE_IN_USE.

The API's side is what it decides with: domain.fit.rows_to_write, which the vps.hosts job runs
to write node_resources.capacity (the SQL guard's number), and domain.compute_settings'
apply_change, which the settings API runs to save compute settings. The plan's side is
reconcile.plan over a FleetConfig's pool or compute section.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from bcfleet.clock import FakeClock
from bcfleet.domain.compute_settings import (
    ComputeSettings,
    EnvironmentUse,
    IndexUse,
    ServiceUse,
    SizeSetting,
    SizeUsers,
    apply_change,
    change_towards,
    check_default,
)
from bcfleet.domain.fit import ResourceRow, capacity, rows_to_write, scalar_totals
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.shapes import Cpu, Inventory
from bcfleet.domain.sizes import DEFAULT_SIZE, SIZE_NAMES
from bcfleet.errors import SizeInUseError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.reconcile.actions import freeze
from bcfleet.reconcile.impact import pool_capacity
from bcfleet.reconcile.load import build_desired
from bcfleet.reconcile.model import (
    ComputeSpec,
    DesiredFleet,
    HostCapacity,
    ObservedCompute,
    ObservedFleet,
    ObservedTenant,
    TenantSpec,
    normalize_overcommit,
)
from bcfleet.reconcile.observe import observe
from bcfleet.reconcile.plan import plan
from bcfleet.tui.host_rows import host_row
from bcfleet.tui.source import LocalSource
from tests.support.builders import OP, inventory
from tests.support.capacity import pool_with_hosts, rows
from tests.support.fleet import open_fleet, run_cli

TENANT = "acme"

# Ratios people write, the binary fractions that trip float arithmetic (1/3, 0.29, 2.01),
# and anything else in the 0.1..100 range.
ratios = st.one_of(
    st.sampled_from([1 / 3, 2 / 3, 0.29, 0.57, 2.01, 1.5, 0.1, 100.0, 1.0]),
    st.decimals("0.1", "100", places=2).map(float),
    st.floats(0.1, 100.0, allow_nan=False),
)
large = st.one_of(st.integers(0, 10**7), st.sampled_from([10**7, 10**7 - 1, 3, 100]))


def _inventory(vcpus: int, memory: int, disk: int) -> Inventory:
    cpus = tuple(Cpu(i, 0, False) for i in range(vcpus))
    return Inventory(cpus=cpus, numa_nodes=(), memory_gib=float(memory), disk_gib=float(disk))


reserves = st.fixed_dictionaries(
    {}, optional={r: st.integers(0, 10**6) for r in ("vcpu", "memoryGiB", "diskGiB")}
)
policies = st.fixed_dictionaries({}, optional=dict.fromkeys(SCALARS, ratios))


@settings(max_examples=300, deadline=None)
@given(
    first=st.tuples(st.integers(0, 64), large, large),
    now=st.tuples(st.integers(0, 64), large, large),
    reserve=st.tuples(reserves, reserves),
    overcommit=st.tuples(policies, policies),
    allocated=st.fixed_dictionaries(dict.fromkeys(SCALARS, large)),
)
def test_plan_and_vps_hosts_agree_on_capacity(
    first: tuple[int, int, int],
    now: tuple[int, int, int],
    reserve: tuple[dict[str, int], dict[str, int]],
    overcommit: tuple[dict[str, float], dict[str, float]],
    allocated: dict[str, int],
) -> None:
    """A host synced under one policy holds guests, may have shrunk or grown since, and its pool
    takes another policy: the plan shows the capacity vps.hosts then stores, warns exactly when
    the host holds more than that, and no row claims more than the host reports."""
    synced = rows_to_write({}, _inventory(*first), HostReserve().with_overrides(reserve[0]),
                           overcommit[0])  # fmt: skip
    old = {r.resource: r._replace(allocated=allocated[r.resource]) for r in synced}
    inventory = _inventory(*now)
    written = rows_to_write(old, inventory, HostReserve().with_overrides(reserve[1]), overcommit[1])
    stored = {**old, **{row.resource: row for row in written}}

    policy: dict[str, Any] = {"overcommit": overcommit[1], "hostReserve": reserve[1]}
    pool = build_desired({"pools": [{"name": "p", "kind": "vps-host", "policy": policy}]}).pools[0]
    host = HostCapacity("h", "p", tuple(old.values()), scalar_totals(inventory))
    changes, warnings = pool_capacity(pool, [host])

    assert {c.resource: c.before for c in changes} == {r: old[r].capacity for r in SCALARS}
    assert {c.resource: c.after for c in changes} == {r: stored[r].capacity for r in SCALARS}
    over = {r for r in SCALARS if allocated[r] > stored[r].capacity}
    assert bool(warnings) == bool(over)
    assert all(stored[r].allocatable <= scalar_totals(inventory)[r] for r in SCALARS)
    event("over capacity" if over else "holds its guests")


def test_ten_cpus_eight_allocated_at_ratio_half_plan_and_row_say_capacity_4() -> None:
    """Document 000's numbers: 10 CPUs, 8 allocatable, one 8-vCPU guest, ratio 1 -> 0.5."""
    inventory = _inventory(10, 72, 600)
    (vcpu, *_) = rows_to_write({}, inventory, HostReserve(), {})
    held = vcpu._replace(allocated=8)
    assert held == ResourceRow("vcpu", 8, 1.0, 8, 8)
    (written,) = [r for r in rows_to_write({"vcpu": held}, inventory, HostReserve(),
                                           {"vcpu": 0.5}) if r.resource == "vcpu"]  # fmt: skip
    assert written == ResourceRow("vcpu", 8, 0.5, 4, 8)

    policy = {"overcommit": {"vcpu": 0.5}}
    pool = build_desired({"pools": [{"name": "p", "kind": "vps-host", "policy": policy}]}).pools[0]
    host = HostCapacity("h", "p", (held,), scalar_totals(inventory))
    (change,), (warning,) = pool_capacity(pool, [host])
    assert (change.resource, change.before, change.after) == ("vcpu", 8, 4)
    assert warning.details["resources"] == {"vcpu": {"allocated": 8, "capacity": 4}}


def test_a_third_of_three_vcpus_is_no_vcpu_in_the_plan_and_in_the_api() -> None:
    inventory = Inventory(
        cpus=tuple(Cpu(i, 0, False) for i in range(5)), numa_nodes=(), memory_gib=0, disk_gib=0
    )
    (vcpu, *_) = rows_to_write({}, inventory, HostReserve(), {"vcpu": 1 / 3})
    assert (vcpu.allocatable, vcpu.capacity) == (3, 0) == (3, capacity(3, 1 / 3))
    policy = {"overcommit": {"vcpu": 1 / 3}}
    pool = build_desired({"pools": [{"name": "p", "kind": "vps-host", "policy": policy}]}).pools[0]
    host = HostCapacity("h", "p", (ResourceRow("vcpu", 3, 1.0, 3, 0),), {"vcpu": 5})
    (change,), _ = pool_capacity(pool, [host])
    assert (change.before, change.after) == (3, 0)


def test_ten_million_at_two_point_oh_one_is_exact() -> None:
    assert capacity(10**7, 2.01) == 20_100_000
    assert capacity(100, 0.29) == 29


# ---------------------------------------------------------------------------
# SIZE_IN_USE

sizes = st.sampled_from(SIZE_NAMES)
names = st.sampled_from(["a", "b", "c"])


@st.composite
def size_users(draw: st.DrawFn) -> SizeUsers:
    environments = draw(
        st.lists(st.builds(lambda n, s: EnvironmentUse(f"env_{n}", n, s), names, sizes), max_size=2)
    )
    env_ids = [e.id for e in environments] + ["env_gone"]
    services = draw(
        st.lists(
            st.builds(
                lambda n, hosting, deployed, size, env: ServiceUse(
                    f"svc_{n}", "prod", n, hosting, deployed, size, env
                ),
                names,
                st.sampled_from(["serverless", "managed"]),
                st.booleans(),
                st.none() | sizes,
                st.none() | st.sampled_from(env_ids),
            ),
            max_size=3,
            unique_by=lambda s: s.id,
        )
    )
    indexes = draw(
        st.lists(
            st.builds(
                lambda n, pod, deployed: IndexUse(f"idx_{n}", "search", n, pod, deployed),
                names,
                st.none() | sizes,
                st.booleans(),
            ),
            max_size=2,
            unique_by=lambda i: i.id,
        )
    )
    unique_envs = {e.id: e for e in environments}
    return SizeUsers(tuple(services), tuple(indexes), tuple(unique_envs.values()))


switches = st.tuples(*(st.booleans() for _ in SIZE_NAMES))
# Stored settings have no default size chosen, so the implicit one is on (check_default).
stored_switches = switches.map(
    lambda on: tuple(o or size == DEFAULT_SIZE for o, size in zip(on, SIZE_NAMES, strict=True))
)


@st.composite
def valid_targets(draw: st.DrawFn) -> tuple[tuple[bool, ...], str | None]:
    """Switches and a default size that check_default accepts, drawn as such (not filtered)."""
    on = draw(switches.filter(any))
    enabled = [size for size, o in zip(SIZE_NAMES, on, strict=True) if o]
    choices = st.sampled_from(enabled)
    default = draw(st.none() | choices if DEFAULT_SIZE in enabled else choices)
    return on, default


def _settings(on: tuple[bool, ...], spares: int = 0) -> tuple[SizeSetting, ...]:
    return tuple(
        SizeSetting(size, enabled, spares) for size, enabled in zip(SIZE_NAMES, on, strict=True)
    )


@settings(max_examples=300, deadline=None)
@given(before=stored_switches, target=valid_targets(), users=size_users())
def test_plan_and_settings_api_agree_on_sizes_in_use(
    before: tuple[bool, ...], target: tuple[tuple[bool, ...], str | None], users: SizeUsers
) -> None:
    after, default = target
    current = ComputeSettings(sizes=_settings(before))
    desired = replace(ComputeSettings(sizes=_settings(after)), default_size=default)
    check_default(ComputeSettings(), current)  # both drawn valid: neither raises
    check_default(current, desired)

    api_error: SizeInUseError | None = None
    try:
        apply_change(current, change_towards(current, desired), users)
    except SizeInUseError as error:
        api_error = error

    state = ObservedFleet(
        tenants=(ObservedTenant(TenantSpec(TENANT, TENANT), managed=True),),
        compute=(ObservedCompute(ComputeSpec(TENANT, sizes=current.sizes), managed=True),),
        size_users={TENANT: users},
    )
    fleet = DesiredFleet(
        tenants=(TenantSpec(TENANT, TENANT),),
        compute=(ComputeSpec(TENANT, default_size=default, sizes=desired.sizes),),  # type: ignore[arg-type]
    )
    errors = [e for e in plan(fleet, state).errors if e.code == "SIZE_IN_USE"]

    event("SIZE_IN_USE" if api_error is not None else "saved")
    if api_error is None:
        assert errors == []
    else:
        (error,) = errors
        assert error.message == f"tenant {TENANT}: {api_error.message}"
        assert error.details["sizes"] == freeze(api_error.details)["sizes"]


# ---------------------------------------------------------------------------
# Through the database: a plan made from the stored state, then the API's own update


@pytest.mark.parametrize(
    ("overcommit", "expected"),
    [
        pytest.param(
            {"vcpu": 1 / 3, "memoryGiB": 0.29, "diskGiB": 2.01},
            {"vcpu": 0, "memoryGiB": 58, "diskGiB": 4_020},
            id="binary-fractions",
        ),
        pytest.param(
            {"vcpu": 100.0, "memoryGiB": 0.1, "diskGiB": 1.5},
            {"vcpu": 600, "memoryGiB": 20, "diskGiB": 3_000},
            id="range-ends",
        ),
    ],
)
def test_a_planned_policy_change_gives_the_capacity_the_api_then_stores(
    any_fleet: Fleet, overcommit: dict[str, float], expected: dict[str, int]
) -> None:
    """Two hosts of 5 CPUs, 108 GiB and 1,100 GiB keep 3, 100 and 1,000 after the reserve."""
    pool = pool_with_hosts(any_fleet, hosts=2, cpus=5, memory_gib=108, disk_gib=1_100, numa_nodes=1)
    with any_fleet.read() as session:
        observed = observe(session)
    (spec,) = (p.spec for p in observed.pools if p.spec.name == pool["name"])
    after = replace(spec, overcommit=normalize_overcommit(overcommit))
    hosts = [h for h in observed.capacity if h.pool == pool["name"]]
    changes, _ = pool_capacity(after, hosts)
    planned = {c.resource: c.after for c in changes}

    any_fleet.api.pools.update(OP, tenant_id="root", pool=pool["id"], overcommit=overcommit)
    run_vps_hosts(any_fleet, any_fleet.now())
    stored = [rows(any_fleet, name) for name in ("h1", "h2")]
    assert planned == {r: sum(host[r]["capacity"] for host in stored) for r in SCALARS}
    assert planned == expected


RATIO_CHANGE = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - { id: root }
  - { id: acme }
pools:
  - name: vps-fra
    kind: vps-host
    offeredTo: [acme]
    policy:
      overcommit: { vcpu: 1 }
hosts:
  - { name: fra-01, pool: vps-fra, labels: { bc.dev/cap.instance.placement: "true" } }
flavors:
  - { pool: vps-fra, name: g1.8, vcpu: 8, memoryGiB: 4, diskGiB: 40 }
"""


def test_plan_row_hosts_show_and_dashboard_agree_after_a_ratio_change(
    db_url: str, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Document 000's host: 10 CPUs (8 allocatable), one 8-vCPU guest, vcpu ratio 1 -> 0.5."""
    monkeypatch.setenv("BCFLEET_NOW", clock.now().isoformat())
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(RATIO_CHANGE)
    after.write_text(RATIO_CHANGE.replace("overcommit: { vcpu: 1 }", "overcommit: { vcpu: 0.5 }"))
    assert run_cli("apply", "-f", str(before), "--yes", db=db_url).exit_code == 0
    fleet = open_fleet(db_url, clock)
    try:
        fleet.api.hosts.report(OP, host="fra-01", inventory=inventory(cpus=10, memory_gib=72))
        run_vps_hosts(fleet, fleet.now())
        guest = fleet.api.instances.create(OP, tenant_id="acme", pool_id="vps-fra", flavor="g1.8")
        assert guest["state"] == "running"
        assert rows(fleet, "fra-01")["vcpu"] == {
            "resource": "vcpu", "allocatable": 8, "ratio": 1.0, "capacity": 8, "allocated": 8
        }  # fmt: skip
    finally:
        fleet.close()

    planned = run_cli("plan", "-f", str(after), db=db_url)
    assert planned.exit_code == 0, planned.stderr
    assert "# pool capacity: vcpu 8 -> 4" in planned.stdout
    assert "vcpu 8 allocated, new capacity 4" in planned.stdout
    assert run_cli("apply", "-f", str(after), "--yes", db=db_url).exit_code == 0
    assert run_cli("jobs", "tick", "--job", "vps.hosts", db=db_url).exit_code == 0

    shown = run_cli("hosts", "show", "--host", "fra-01", "--json", db=db_url)
    (vcpu,) = [r for r in json.loads(shown.stdout)["resources"] if r["resource"] == "vcpu"]
    assert vcpu == {"resource": "vcpu", "allocatable": 8, "ratio": 0.5, "capacity": 4,
                    "allocated": 8}  # fmt: skip
    fleet = open_fleet(db_url, clock)
    try:
        (listed,) = LocalSource(fleet, label="test").hosts()
        cells = host_row(listed, fleet.now()).cells
        assert str(cells[3]).startswith("8/4 ×0.5")  # the dashboard's VCPU column
        with fleet.read() as session:
            (capacity_now,) = observe(session).capacity
        assert [r for r in capacity_now.rows if r.resource == "vcpu"] == [
            ResourceRow("vcpu", 8, 0.5, 4, 8)
        ]
        assert run_cli("plan", "-f", str(after), "--detailed-exitcode", db=db_url).exit_code == 0
        problems = fleet.api.doctor.check(OP, invariants=True)["invariants"]["problems"]
        assert problems["overCapacity"] == [f"node {listed['id']}: vcpu 8 allocated of capacity 4"]
    finally:
        fleet.close()


def test_a_tenant_controlled_hosts_rows_are_left_alone_by_the_plan_as_by_vps_hosts(
    any_fleet: Fleet,
) -> None:
    pool_with_hosts(any_fleet, hosts=2, cpus=10, numa_nodes=1)
    any_fleet.api.hosts.update(OP, host="h2", tenant_controlled=True)
    with any_fleet.read() as session:
        observed = observe(session)
    (spec,) = (p.spec for p in observed.pools)
    after = replace(spec, overcommit=normalize_overcommit({"vcpu": 0.5}))
    (vcpu, *_), _ = pool_capacity(after, observed.capacity)
    any_fleet.api.pools.update(OP, tenant_id="root", pool=spec.name, overcommit={"vcpu": 0.5})
    run_vps_hosts(any_fleet, any_fleet.now())
    assert (
        rows(any_fleet, "h1")["vcpu"]["capacity"],
        rows(any_fleet, "h2")["vcpu"]["capacity"],
    ) == (4, 8)
    assert (vcpu.resource, vcpu.before, vcpu.after) == ("vcpu", 16, 12)
