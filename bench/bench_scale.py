"""The scale curve: what each cost does from 1,000 to 100,000 hosts with 10 instances a host.

For each size (`--sizes`, default 1,000, 10,000, 50,000 and 100,000 hosts) a SQLite fleet is
built: bench/common.py's pool (`seed_pool`: hosts of 64 vCPU at ratio 2, 256 GiB, 2 TB, flavor
2/4/40), one instance placed through the API, and then `--per-host` instances a host in all,
written in bulk with Core inserts into the store's own tables, copying that placed instance's
rows; node_resources and quotas count them. Building is not measured. Then, each in a fresh
process so that its peak RSS is its own:

- placement: `instances.create` on the full fleet, wall (p50, p99) and CPU a placement over
  --placements after a warm-up; with --callgrind also the instructions a placement, counted
  as bench/count_placement.py counts them (two counted children on copies of the fleet, the
  difference over --counted placements);
- plan: `fleet plan`'s work (load and check a FleetConfig declaring every host, plan against
  the database, render the JSON) without the interpreter's start-up: the plan of a fleet the
  document was applied to (no changes), as a scheduled plan finds it;
- usage tick: one vps.usage tick metering one 5-minute window of every instance;
- vps.hosts: one tick of the job over every host (steady state: nothing to rewrite);
- hosts list: `fleet hosts list --json` as a command, its output read as it comes, less the
  same command listing an empty pool (start-up, open, authorization): its time and peak RSS;
- first paint: the dashboard's Hosts table showing its rows (bench/bench_tui.py's measure).

Per-item figures (a placement, a tick per instance) should stay within 1.5 × their value at the
smallest size; whole-fleet figures are reported per host and should stay within 1.5 × too
(linear); every peak RSS under 1 GiB. Prints a table, writes a PNG plot (--plot, default
docs/img/scale.png; needs matplotlib, the `bench` extra) and a JSON line last.

Each stage also appends its figures to `scale-N.db.stages.jsonl` beside its fleet. With `--dir
D --keep` the fleets stay in D; `--reuse` then measures again on them without building, and
`--from RUN.out ...` renders the table and plot of earlier runs' JSON lines (the large sizes
can be measured once, in a run of their own).

    python bench/bench_scale.py [--sizes 1000 10000 50000 100000] [--per-host 10]
        [--placements 200] [--callgrind] [--counted 100] [--plot PATH | --no-plot]
        [--dir D [--keep] [--reuse]] [--from RUN.out ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import T0, emit, peak_rss_mb  # noqa: E402

SIZES = (1000, 10_000, 50_000, 100_000)
PER_HOST = 10
CHUNK = 10_000
GIB_MB = 1024.0
PER_ITEM_LIMIT = 1.5
POOL = "bench"  # seed_pool's name
EMPTY_POOL = "empty"
TICK_AT = T0 + timedelta(minutes=10, seconds=40)  # the window [T0+5m, T0+10m) is closed
STAGES = ("build", "placement", "count", "plan", "usage", "hosts-job", "paint")

FIGURES: dict[str, tuple[str, str, str]] = {
    "placementWallMs": ("placement, wall p50", "item", "ms"),
    "placementCpuMs": ("placement, CPU", "item", "ms"),
    "placementInstructions": ("placement, instructions", "item", ""),
    "usageTickCpuUsPerInstance": ("vps.usage tick, CPU per instance", "item", "µs"),
    "planCpuUsPerHost": ("fleet plan, CPU per host", "host", "µs"),
    "hostsJobCpuUsPerHost": ("vps.hosts tick, CPU per host", "host", "µs"),
    "hostsListCpuUsPerHost": ("fleet hosts list --json, CPU per host", "host", "µs"),
    "firstPaintCpuUsPerHost": ("dashboard first paint, CPU per host", "host", "µs"),
}
"""Each figure: its label, whether it is per item or a whole-fleet cost per host, its unit.
CPU time, not wall: on a shared machine wall time moves with the neighbours (the stages print
their wall seconds too). SQLite runs in the measuring process, so its CPU holds the database's."""
MEMORY = ("build", "placement", "plan", "usage", "hostsJob", "hostsList", "paint")
"""The measured parts whose peak RSS is reported (each a process of its own)."""


def open_fleet(path: Path, seed: int | None = None) -> Any:
    """The fleet at path on the fixed clock; ids seeded (repeatable) or random (unseeded: a
    later process's ids never meet an earlier one's)."""
    from bcfleet.clock import FakeClock
    from bcfleet.fleet import Fleet
    from bcfleet.ids import IdFactory
    from bcfleet.settings import FleetSettings

    url = f"sqlite:///{path}"
    return Fleet.open(
        url, clock=FakeClock(T0), settings=FleetSettings(db_url=url), ids=IdFactory(seed=seed)
    )


# --- building the fleet (not measured) ------------------------------------------------------


def build(path: Path, hosts: int, per_host: int) -> dict[str, Any]:
    """The fleet of `hosts` hosts and hosts × per_host running instances, in bulk."""
    from sqlalchemy import select, update

    from bcfleet.api.auth import LOCAL_OPERATOR
    from bcfleet.domain.usage import METER_MEMORY, METER_VCPU
    from bcfleet.store.tables import (
        ALLOCATIONS,
        FLAVORS,
        HOSTS,
        INSTANCES,
        NODE_RESOURCES,
        POOLS,
        QUOTAS,
        TENANTS,
    )
    from bench.common import seed_pool

    started = time.perf_counter()
    fleet = open_fleet(path, seed=1)
    api = fleet.api
    pool = seed_pool(fleet, hosts, name=POOL)
    api.pools.create(LOCAL_OPERATOR, tenant_id="root", name=EMPTY_POOL, kind="vps-host")
    api.meters.ensure(LOCAL_OPERATOR, [METER_VCPU, METER_MEMORY])
    placed = api.instances.create(
        LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
    )
    with fleet.read_core() as connection:
        instance = dict(
            connection.execute(select(INSTANCES).where(INSTANCES.c.id == placed["id"]))
            .mappings()
            .one()
        )
        allocation = dict(
            connection.execute(
                select(ALLOCATIONS).where(ALLOCATIONS.c.id == instance["allocation_id"])
            )
            .mappings()
            .one()
        )
        nodes = [row[0] for row in connection.execute(select(NODE_RESOURCES.c.node_id).distinct())]
    claims: dict[str, int] = allocation["claims"]
    slots = ((node, k) for node in nodes for k in range(per_host))
    rows = (slot for slot in slots if not (slot[0] == instance["node_id"] and slot[1] == 0))
    made = 1
    for chunk in _chunks(rows, CHUNK):
        instances, allocations = [], []
        for node, _ in chunk:
            made += 1
            ins_id, alloc_id = fleet.new_id("ins"), fleet.new_id("alloc")
            name = f"b1.small-{100000 + made}"
            instances.append(
                {**instance, "id": ins_id, "name": name, "node_id": node, "allocation_id": alloc_id}
            )
            allocations.append(
                {**allocation, "id": alloc_id, "node_id": node, "consumer_id": ins_id}
            )
        with fleet.write(bump_revision=False) as session:
            connection = session.connection()
            connection.execute(INSTANCES.insert(), instances)
            connection.execute(ALLOCATIONS.insert(), allocations)
    with fleet.write() as session:
        connection = session.connection()
        for declared in (
            TENANTS,
            POOLS,
            FLAVORS,
            HOSTS,
        ):  # as `fleet apply` of fleetconfig() leaves them
            connection.execute(update(declared).values(managed=True))
        for resource, claim in claims.items():
            connection.execute(
                update(NODE_RESOURCES)
                .where(NODE_RESOURCES.c.resource == resource)
                .values(allocated=claim * per_host)
            )
            connection.execute(
                update(QUOTAS)
                .where(QUOTAS.c.tenant_id == "bench", QUOTAS.c.resource == resource)
                .values(used=claim * made)
            )
    fleet.close()
    return {
        "instances": made,
        "buildSeconds": round(time.perf_counter() - started, 1),
        "dbMb": round(path.stat().st_size / 2**20, 1),
        "peakRssMb": peak_rss_mb(),
    }


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def fleetconfig(hosts: int) -> str:
    """A FleetConfig declaring the built fleet: its tenants, pools, flavor and every host (build
    marks them managed, so its plan is the one of a fleet this document was applied to)."""
    lines = [
        "apiVersion: bcfleet.dev/v1",
        "kind: FleetConfig",
        "tenants:",
        "  - { id: root }",
        "  - { id: bench }",
        "pools:",
        f"  - {{ name: {POOL}, kind: vps-host, offeredTo: [bench], "
        "policy: { overcommit: { vcpu: 2 } } }",
        f"  - {{ name: {EMPTY_POOL}, kind: vps-host }}",
        "flavors:",
        f"  - {{ pool: {POOL}, name: b1.small, vcpu: 2, memoryGiB: 4, diskGiB: 40 }}",
        "hosts:",
    ]
    lines += [f"  - {{ name: {POOL}-{i:05d}, pool: {POOL} }}" for i in range(hosts)]
    return "\n".join(lines) + "\n"


# --- the measured stages, each in a process of its own ---------------------------------------


def stage(name: str, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One stage in this process; its figures, also appended to the fleet's log beside it
    (`scale-N.db.stages.jsonl`), so that a long run's figures outlive the run."""
    if name == "build":
        result = build(path, args.hosts, args.per_host)
    elif name == "count":
        return {"placed": count_child(path, args.placements)}
    else:
        wall, cpu = time.perf_counter(), time.process_time()
        result = STAGE_RUNS[name](path, args)
        result.setdefault("seconds", round(time.perf_counter() - wall, 3))
        result.setdefault("cpuSeconds", round(time.process_time() - cpu, 3))
        result["peakRssMb"] = peak_rss_mb()
    with Path(f"{path}.stages.jsonl").open("a") as log:
        log.write(json.dumps({"stage": name, "hosts": args.hosts, **result}) + "\n")
    return result


def placement_stage(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    from bcfleet.api.auth import LOCAL_OPERATOR
    from bench.common import summary, timed, timed_with_cpu
    from bench.processes import WARM_UP

    fleet = open_fleet(path)
    pool = fleet.api.pools.show(LOCAL_OPERATOR, tenant_id="root", pool=POOL)

    def place() -> None:
        made = fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
        )
        assert made["state"] == "running", made

    timed(place, WARM_UP)
    samples, cpu = timed_with_cpu(place, args.placements)
    fleet.close()
    return {**summary(samples), **cpu}


def count_child(path: Path, count: int) -> int:
    """Under callgrind: open the fleet and make `count` placements (no checkpoint thread, whose
    wake-ups are not repeatable: as bench/count_placement.py's children)."""
    from bcfleet.api.auth import LOCAL_OPERATOR
    from bcfleet.store import wal_checkpoints

    wal_checkpoints.EVERY_COMMITS = 2**62
    wal_checkpoints.BACKSTOP_PAGES = 10**9
    fleet = open_fleet(path, seed=2)  # both counted children make the same ids
    pool = fleet.api.pools.show(LOCAL_OPERATOR, tenant_id="root", pool=POOL)
    placed = sum(
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
        )["state"]
        == "running"
        for _ in range(count)
    )
    fleet.close()
    return placed


def plan_stage(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    from bcfleet.api.auth import LOCAL_OPERATOR
    from bcfleet.reconcile.apply import make_plan
    from bcfleet.reconcile.load import load_fleetconfig
    from bcfleet.reconcile.render import render_json_text

    fleet = open_fleet(path)
    wall, cpu = time.perf_counter(), time.process_time()
    desired = load_fleetconfig(args.file, host_reserve=fleet.settings.host_reserve)
    result = make_plan(fleet, LOCAL_OPERATOR, desired)
    text = render_json_text(result)
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    fleet.close()
    return {
        "seconds": round(seconds, 3),
        "cpuSeconds": round(cpu_seconds, 3),
        "changes": len(result.changes),
        "errors": len(result.errors),
        "planKb": round(len(text) / 1024, 1),
    }


def usage_stage(path: Path, _args: argparse.Namespace) -> dict[str, Any]:
    from sqlalchemy import delete, func, select

    from bcfleet.clock import FakeClock
    from bcfleet.domain.usage import WINDOW, window_start
    from bcfleet.jobs.vps_usage import JOB, SETTLE, run_vps_usage
    from bcfleet.store.models.jobs import JobState
    from bcfleet.store.models.usage import UsageWindow
    from bcfleet.store.tables import INSTANCES

    fleet = open_fleet(path)
    fleet.clock = FakeClock(TICK_AT)
    with fleet.write(bump_revision=False) as session:  # one window to meter, again on --reuse
        session.execute(delete(UsageWindow))
        session.merge(JobState(job=JOB, watermark=window_start(TICK_AT - SETTLE) - WINDOW))
        running = session.execute(
            select(func.count()).where(INSTANCES.c.state == "running")
        ).scalar_one()
    wall, cpu = time.perf_counter(), time.process_time()
    counts = run_vps_usage(fleet, TICK_AT)
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    fleet.close()
    return {
        "seconds": round(seconds, 3),
        "cpuSeconds": round(cpu_seconds, 3),
        "instances": running,
        **counts,
    }


def hosts_job_stage(path: Path, _args: argparse.Namespace) -> dict[str, Any]:
    from bcfleet.jobs.vps_hosts import run_vps_hosts

    fleet = open_fleet(path)
    wall, cpu = time.perf_counter(), time.process_time()
    counts = run_vps_hosts(fleet, fleet.now())
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    fleet.close()
    return {"seconds": round(seconds, 3), "cpuSeconds": round(cpu_seconds, 3), **counts}


def paint_stage(path: Path, _args: argparse.Namespace) -> dict[str, Any]:
    from bcfleet.tui.source import LocalSource
    from bench.bench_tui import dashboard, first_paint

    fleet = open_fleet(path)
    app = dashboard(LocalSource(fleet))

    async def run() -> dict[str, float]:
        started, cpu_started = time.perf_counter(), time.process_time()
        async with app.run_test(size=(120, 40)):
            return await first_paint(app, started, cpu_started)

    result = asyncio.run(run())
    fleet.close()
    return {**result, "seconds": result["first_paint_s"]}


STAGE_RUNS = {
    "placement": placement_stage,
    "plan": plan_stage,
    "usage": usage_stage,
    "hosts-job": hosts_job_stage,
    "paint": paint_stage,
}


def run_stage(name: str, path: Path, hosts: int, *extra: str) -> dict[str, Any]:
    """One stage in a fresh process; its JSON line."""
    command = [sys.executable, __file__, "--stage", name, "--db", str(path), "--hosts", str(hosts)]
    done = subprocess.run([*command, *extra], capture_output=True, text=True, check=False)
    if done.returncode != 0:  # reported, and the other stages go on
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def hosts_list(path: Path, pool: str | None = None) -> dict[str, Any]:
    """`fleet hosts list --json` as a command, its output read as it comes: wall seconds, bytes,
    and the command's own CPU seconds and peak RSS (from wait4)."""
    command = [sys.executable, "-m", "bcfleet", "hosts", "list", "--json", "--db"]
    command += [f"sqlite:///{path}", *(["--pool", pool] if pool else [])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BCFLEET_NOW", None)
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    assert child.stdout is not None
    size = 0
    while block := child.stdout.read(1 << 16):
        size += len(block)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        return {"error": f"exit {child.returncode}"}
    return {
        "seconds": round(seconds, 3),
        "cpuSeconds": round(usage.ru_utime + usage.ru_stime, 3),
        "outputMb": round(size / 2**20, 2),
        "peakRssMb": round(usage.ru_maxrss / 1024, 1),
    }


def count_instructions(path: Path, hosts: int, before: int, counted: int) -> int:
    """Instructions a placement: two children under callgrind, each on its own copy of the
    fleet, making `before` and `before + counted` placements; the difference over `counted`."""
    from bench.count_placement import instructions

    def one(count: int) -> int:
        copy = path.with_name(f"count-{count}.db")
        shutil.copyfile(path, copy)
        try:
            args = [__file__, "--stage", "count", "--db", str(copy), "--hosts", str(hosts)]
            return instructions([*args, "--placements", str(count)], f"the counted child ({count})")
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        warm, total = pool.map(one, (before, before + counted))
    return round((total - warm) / counted)


# --- one size, and the curve -----------------------------------------------------------------


def measure(hosts: int, args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """Build the fleet of `hosts` hosts, then every stage on it; a failed stage is reported as
    its error and the others go on."""
    path = directory / f"scale-{hosts}.db"
    say = print if not args.quiet else (lambda *_: None)
    out: dict[str, Any] = {"hosts": hosts}
    built = logged(path, "build") if args.reuse and path.exists() else None
    if built is None:
        built = run_stage("build", path, hosts, "--per-host", str(args.per_host))
    if "error" in built:
        raise SystemExit(f"building {hosts} hosts failed: {built['error']}")
    out["build"] = built
    say(
        f"{hosts:>7} hosts: built {built['instances']} instances in {built['buildSeconds']} s, "
        f"{built['dbMb']} MB, peak RSS {built['peakRssMb']} MB"
    )
    config = directory / f"scale-{hosts}.yaml"
    config.write_text(fleetconfig(hosts))
    out["paint"] = run_stage("paint", path, hosts)
    empty, listed = hosts_list(path, EMPTY_POOL), hosts_list(path)
    if "error" not in empty and "error" not in listed:
        listed["overEmptyCpuSeconds"] = round(listed["cpuSeconds"] - empty["cpuSeconds"], 3)
    out["hostsList"] = {**listed, "empty": empty}
    out["plan"] = run_stage("plan", path, hosts, "--file", str(config))
    out["hostsJob"] = run_stage("hosts-job", path, hosts)
    out["usage"] = run_stage("usage", path, hosts)
    out["placement"] = run_stage("placement", path, hosts, "--placements", str(args.placements))
    if args.callgrind:
        out["placementInstructions"] = count_instructions(path, hosts, args.before, args.counted)
    instances = built["instances"]
    out["figures"] = {
        "placementWallMs": out["placement"].get("p50Ms"),
        "placementCpuMs": out["placement"].get("clientCpuMs"),
        "placementInstructions": out.get("placementInstructions"),
        "usageTickCpuUsPerInstance": _micro(
            out["usage"].get("cpuSeconds"), out["usage"].get("instances", instances)
        ),
        "planCpuUsPerHost": _micro(out["plan"].get("cpuSeconds"), hosts),
        "hostsJobCpuUsPerHost": _micro(out["hostsJob"].get("cpuSeconds"), hosts),
        "hostsListCpuUsPerHost": _micro(listed.get("overEmptyCpuSeconds"), hosts),
        "firstPaintCpuUsPerHost": _micro(out["paint"].get("first_paint_cpu_s"), hosts),
    }
    out["peakRssMb"] = {key: out[key].get("peakRssMb") for key in MEMORY}
    say(
        f"{hosts:>7} hosts: "
        + json.dumps({"figures": out["figures"], "peakRssMb": out["peakRssMb"]})
    )
    if not (args.keep or args.reuse):
        for suffix in ("", "-wal", "-shm", ".stages.jsonl"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return out


def logged(path: Path, name: str) -> dict[str, Any] | None:
    """The last figures the fleet's log holds for a stage; None when it holds none."""
    log = Path(f"{path}.stages.jsonl")
    found = None
    if log.exists():
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            if entry.pop("stage") == name:
                found = entry
    return found


def _micro(seconds: float | None, count: int) -> float | None:
    """Microseconds an item (or a host); None when the stage failed."""
    return None if seconds is None else round(1e6 * max(0.0, seconds) / count, 3)


def earlier(files: list[Path], sizes: list[int]) -> list[dict[str, Any]]:
    """Each size's result from the last of the files (each ending in a JSON line) holding it."""
    found: dict[int, dict[str, Any]] = {}
    for file in files:
        for result in json.loads(file.read_text().strip().splitlines()[-1])["results"]:
            found[result["hosts"]] = result
    missing = sorted(set(sizes) - set(found))
    if missing:
        raise SystemExit(f"no earlier result for {missing} hosts")
    return [found[size] for size in sizes]


def ratios(results: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each figure at the largest size over its value at the smallest."""
    first, last = results[0]["figures"], results[-1]["figures"]
    return {
        key: (round(last[key] / first[key], 2) if first.get(key) and last.get(key) else None)
        for key in FIGURES
    }


def table(results: list[dict[str, Any]], ratio: dict[str, float | None]) -> str:
    sizes = [r["hosts"] for r in results]
    head = f"{'':44}" + "".join(f"{s:>12,}" for s in sizes) + f"{'ratio':>9}"
    lines = [head]
    for key, (label, _, unit) in FIGURES.items():
        cells = "".join(_cell(r["figures"].get(key)) for r in results)
        shown = "-" if ratio[key] is None else f"{ratio[key]:.2f}x"
        lines.append(f"{label + (f' ({unit})' if unit else ''):44}{cells}{shown:>9}")
    for key in MEMORY:
        cells = "".join(_cell(r["peakRssMb"].get(key)) for r in results)
        lines.append(f"{'peak RSS ' + key + ' (MB)':44}{cells}")
    cells = "".join(_cell(r["build"]["buildSeconds"]) for r in results)
    lines.append(f"{'build, not measured (s)':44}{cells}")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return f"{'-':>12}"
    return f"{value:>12,.0f}" if value >= 1000 else f"{value:>12.3g}"


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Each figure over its value at the smallest size, and the peak RSS, against hosts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["hosts"] for r in results]
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for key, (label, _, _) in FIGURES.items():
        values = [r["figures"].get(key) for r in results]
        if not values[0] or any(v is None for v in values):
            continue
        left.plot(sizes, [v / values[0] for v in values], marker="o", label=label)
    left.axhline(PER_ITEM_LIMIT, color="red", linestyle="--", linewidth=1, label="1.5 × limit")
    left.axhline(1.0, color="grey", linewidth=0.5)
    left.set(
        xscale="log",
        xlabel="hosts (10 instances a host)",
        ylabel=f"cost / cost at {sizes[0]:,} hosts",
        title="Per item and per host: flat is linear",
    )
    left.legend(fontsize=7)
    for key in MEMORY:
        points = [(r["hosts"], r["peakRssMb"][key]) for r in results if r["peakRssMb"].get(key)]
        right.plot(*zip(*points, strict=True), marker="o", label=key)
    right.axhline(GIB_MB, color="red", linestyle="--", linewidth=1, label="1 GiB")
    right.set(xscale="log", xlabel="hosts", ylabel="peak RSS (MB)", title="Peak memory")
    right.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--per-host", type=int, default=PER_HOST)
    parser.add_argument("--placements", type=int, default=200)
    parser.add_argument("--callgrind", action="store_true", help="count instructions (valgrind)")
    parser.add_argument("--before", type=int, default=20, help="callgrind: warm-up placements")
    parser.add_argument("--counted", type=int, default=100, help="callgrind: counted placements")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "scale.png")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--dir", type=Path, help="where the fleets are built (a temporary one)")
    parser.add_argument("--quiet", action="store_true", help="only the JSON line")
    parser.add_argument("--keep", action="store_true", help="keep the fleets built (with --dir)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep: measure again on a fleet kept in --dir instead of building it",
    )
    parser.add_argument(
        "--from",
        dest="earlier",
        type=Path,
        nargs="+",
        help="no measuring: the table and plot of earlier runs' JSON lines (a size from the "
        "last file that has it), for sizes measured in separate runs",
    )
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--hosts", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        emit(stage(args.stage, args.db, args))
        return
    if min(args.sizes) < 1 or args.per_host < 1 or args.placements < 1:
        parser.error("--sizes, --per-host and --placements must be at least 1")
    if args.callgrind and shutil.which("valgrind") is None:
        sys.exit("--callgrind needs valgrind")
    sizes = sorted(set(args.sizes))
    if (args.keep or args.reuse) and args.dir is None:
        parser.error("--keep and --reuse need --dir")
    if args.earlier:
        results = earlier(args.earlier, sizes)
    elif args.keep or args.reuse:
        args.dir.mkdir(parents=True, exist_ok=True)
        results = [measure(hosts, args, args.dir) for hosts in sizes]
    else:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            results = [measure(hosts, args, Path(tmp)) for hosts in sizes]
    ratio = ratios(results)
    if not args.quiet:
        print(table(results, ratio))
    if not args.no_plot:
        plot(results, args.plot)
    peak = max(v for r in results for v in r["peakRssMb"].values() if v is not None)
    emit(
        {
            "sizes": sizes,
            "perHost": args.per_host,
            "results": results,
            "ratioLargestOverSmallest": ratio,
            "withinPerItemLimit": {
                k: v is not None and v <= PER_ITEM_LIMIT for k, v in ratio.items()
            },
            "peakRssMb": peak,
            "peakUnder1GiB": peak < GIB_MB,
        }
    )


if __name__ == "__main__":
    main()
