"""Benchmark of the dashboard on 5,000 hosts and 50,000 instances: first paint, refresh, idle CPU.

Run from the repository root: `python bench/bench_tui.py [--hosts N] [--instances M] [--idle S]`.
The fleet is written straight into a fresh SQLite file (the API would take minutes
to seed it): one vps-host pool with overcommit, every host with the simulated
two-socket inventory (4 GPUs), its node_resources rows and GPU atoms, and the
instances spread over the hosts, one in fifty with a PlacementDegraded condition.
Then, headless at 120×40, the app run as `fleet tui` runs it (freeze_heap):

- first_paint_s: from starting the app to the Hosts table showing its rows (and its CPU);
  hosts.list carries the GPUs and degraded guests, so that is the whole load;
- full_load_s: until that first fetch has finished and been shown;
- refresh_s: `r` (a forced hosts.list), median of --runs: from the key press to the first
  draw of the screen after the view showed the fetched rows; refresh_cpu_s, its CPU;
- refresh_pilot_s: the same refreshes until Pilot has seen the app idle, as refresh_s was
  timed before: Pilot.press and Pilot.pause sleep 20 ms at a time until a 20 ms slice
  passes without work, twice in press and once in pause, so this adds about 60-100 ms
  that are the harness's, not the dashboard's;
- refresh_after_change_s: the timer's refresh after a write, until the screen shows it
  (refresh_after_change_pilot_s: until Pilot has seen the app idle);
- refresh_unchanged_s: a timer tick when the state revision has not moved (no refetch);
- degraded_view_s: switching to the Degraded view until its rows show (instances.list
  asked for the PlacementDegraded ones only, and hosts.list for their hosts' names);
- instances_view_s, pools_view_s: the same for the Instances view (the first 1,000: pending
  ones, then the newest, and the total) and the Pools view;
- instance_filter_p50_s, instance_filter_p99_s (and _max_s, _keys): in the Instances view of
  the 50,000, `/` then names typed a key at a time (and ctrl+u between them): from each key
  press to the first draw of the screen after the view showed the server's answer to it (the
  filter is asked of instances.list, a page at a time); instance_filter_cpu_p50_s, the CPU
  the process spent per key (API and console, with Pilot's own share), which a busy machine
  does not stretch;
- tui_*: the dashboard's own share on the fetched rows: fill the table, apply the same rows
  again (a refresh where nothing moved), sort by VCPU, filter;
- idle_cpu_percent: CPU of the process over --idle seconds with the 2 s refresh running;
- api_*: the API calls behind those numbers, timed on their own (instances.list of every
  instance is no longer read by the dashboard; it is timed for the CLI and HTTP API).
The last line is one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.domain.bounds import PAGE_MAX  # noqa: E402
from bcfleet.domain.simulated_inventory import two_socket_host  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.ids import IdFactory  # noqa: E402
from bcfleet.tui.app import FleetApp  # noqa: E402
from bcfleet.tui.instance_pages import server_query  # noqa: E402
from bcfleet.tui.screens.catalog import PoolsView  # noqa: E402
from bcfleet.tui.screens.degraded import DegradedView  # noqa: E402
from bcfleet.tui.screens.hosts import HostsView  # noqa: E402
from bcfleet.tui.screens.instances import COLUMNS, InstancesView  # noqa: E402
from bcfleet.tui.screens.table import TableView  # noqa: E402
from bcfleet.tui.source import LocalSource  # noqa: E402

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
STAMP = "2026-11-30 10:00:00.000000"
DEGRADED = json.dumps(
    [{"type": "PlacementDegraded", "status": "True", "reason": "NoNumaNodeFits",
      "message": "no single NUMA node has the free CPUs and memory; the guest runs floating",
      "lastTransitionTime": "2026-11-30T10:00:00Z"}]
)  # fmt: skip


def seed(path: Path, hosts: int, instances: int) -> dict[str, float]:
    """The fleet, mostly in raw SQL: schema and pool through Fleet, rows with executemany."""
    started = time.perf_counter()
    fleet = Fleet.open(f"sqlite:///{path}", clock=FakeClock(NOW), ids=IdFactory(seed=1))
    pool = fleet.api.pools.create(LOCAL_OPERATOR, tenant_id="root", name="vps-big",
                                  kind="vps-host", gpu_model="L40S",
                                  overcommit={"vcpu": 2, "memoryGiB": 1.5})  # fmt: skip
    fleet.close()
    inventory = json.dumps(two_socket_host(seed=1, gpus=4, hostname="big"))
    placement = json.dumps({"cpus": None, "cpuset": list(range(2, 64)), "mems": None,
                            "hugepageSizeBytes": None, "hugepagesByNode": {},
                            "memoryByNode": {}, "degradedReason": None, "balloon": True})  # fmt: skip
    shape = json.dumps({"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "gpus": 0})
    per_host = max(1, instances // hosts)
    con = sqlite3.connect(path)
    con.executemany(
        "INSERT INTO hosts (id, name, pool_id, labels, tenant_controlled, state, inventory,"
        " inventory_reported_at, inventory_generation, created_at, managed)"
        " VALUES (?, ?, ?, '{}', 0, 'ready', ?, ?, 1, ?, 0)",
        (
            (f"node_{i:026d}", f"big-{i:05d}", pool["id"], inventory, STAMP, STAMP)
            for i in range(hosts)
        ),
    )
    rows = []
    for i in range(hosts):
        for resource_name, allocatable, ratio, claim in (
            ("vcpu", 62, 2.0, 2), ("memoryGiB", 245, 1.5, 4), ("diskGiB", 1763, 1.0, 40)
        ):  # fmt: skip
            rows.append((f"node_{i:026d}", resource_name, allocatable, ratio,
                         int(allocatable * ratio), claim * per_host))  # fmt: skip
    con.executemany(
        "INSERT INTO node_resources (node_id, resource, allocatable, ratio, capacity, allocated,"
        " generation) VALUES (?, ?, ?, ?, ?, ?, 1)",
        rows,
    )
    gpus = two_socket_host(seed=1, gpus=4, hostname="big")["gpus"]
    con.executemany(
        "INSERT INTO gpu_atoms (node_id, \"index\", model, pci_address, numa_node, present)"
        " VALUES (?, ?, ?, ?, ?, 1)",
        ((f"node_{i:026d}", index, gpu["model"], gpu["pciAddress"], gpu["numaNode"])
         for i in range(hosts) for index, gpu in enumerate(gpus)),
    )  # fmt: skip
    con.executemany(
        "INSERT INTO instances (id, tenant_id, pool_id, name, state, shape, node_id, host_placement,"
        " conditions, purpose, created_at, updated_at)"
        " VALUES (?, 'root', ?, ?, 'running', ?, ?, ?, ?, 'tenant', ?, ?)",
        ((f"ins_{n:026d}", pool["id"], f"vm-{n:06d}", shape, f"node_{n % hosts:026d}", placement,
          DEGRADED if n % 50 == 0 else "[]", STAMP, STAMP) for n in range(instances)),
    )  # fmt: skip
    con.commit()
    con.close()
    return {"seed_s": round(time.perf_counter() - started, 2)}


def timed(call: Callable[[], Any], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times), 4)


def api_times(source: LocalSource) -> dict[str, float]:
    host = source.hosts()[0]["id"]
    return {
        "api_hosts_list_s": timed(source.hosts),
        "api_instances_list_s": timed(lambda: source.api.instances.list(source.credential), runs=2),
        "api_degraded_s": timed(source.degraded),
        "api_instances_page_s": timed(lambda: source.instances_page(PAGE_MAX), runs=2),
        "api_host_show_ms": round(timed(lambda: source.host(host), runs=20) * 1000, 2),
        "api_revision_ms": round(timed(source.revision, runs=20) * 1000, 3),
    }


async def wait_for(condition: Callable[[], bool], limit: float = 600) -> float:
    """Poll on the app's own loop (not Pilot.pause, which also waits for the CPU to go idle)."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > limit:
            raise TimeoutError("the dashboard did not get there in time")
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


def table_times(view: HostsView) -> dict[str, float]:
    """The dashboard's own share, without the API: fill, sort and filter the 5,000 rows."""
    table = view.table
    out = {}
    started = time.perf_counter()
    table.set_rows([])
    view.show(view.data)
    out["tui_fill_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    view.show(view.data)
    out["tui_same_rows_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    table.sort_by(3, reverse=True)
    out["tui_sort_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    table.set_filter("big-01")
    out["tui_filter_s"] = round(time.perf_counter() - started, 3)
    table.set_filter("")
    table.sort_by(None)
    return out


async def view_switch(app: FleetApp, pilot: Any, key: str, view: type[TableView]) -> float:
    """Switch to a view by its key, time until its rows show, and come back to Hosts."""
    begun = time.perf_counter()
    await pilot.press(key)

    def shown() -> bool:
        screen = app.screen
        return isinstance(screen, view) and not screen._busy and screen.table.row_count > 0

    await wait_for(shown)
    took = round(time.perf_counter() - begun, 3)
    await pilot.press("1")
    await wait_for(lambda: isinstance(app.screen, HostsView) and not app.screen._busy)
    return took


FILTERED = ("vm-000123", "vm-049999", "vm-012345", "vm-031415", "vm-000007", "vm-027182")
"""What the filter timing types: instances at the start, the end and the middle of the fleet."""


async def filter_times(app: FleetApp, pilot: Any, draws: Draws) -> dict[str, Any]:
    """In the Instances view: each key of each name in FILTERED (ctrl+u first), from the
    press to the first draw after the view showed the answer to the filter it made."""
    await pilot.press("9")
    await wait_for(lambda: isinstance(app.screen, InstancesView) and not app.screen._busy)
    view = app.screen
    assert isinstance(view, InstancesView) and view.listing is not None and view.listing.paged
    draws.watch(view)
    await pilot.press("slash")
    times: list[float] = []
    cpu: list[float] = []
    typed_keys: list[str] = []
    before = view.pager.query
    for name in FILTERED:
        for index, key in enumerate(["ctrl+u", *name]):
            typed = name[:index]
            query = server_query(typed, COLUMNS, None, False)[0]
            if query == before:  # ctrl+u in an empty prompt: nothing to ask
                continue
            before = query
            begun, cpu_begun = time.perf_counter(), time.process_time()
            await pilot.press(key)
            await wait_for(lambda q=query: view.listing.query == q and not view._busy)  # type: ignore[union-attr,misc]
            await pilot.pause()
            times.append(draws.on_screen_since(begun))
            cpu.append(time.process_time() - cpu_begun)
            typed_keys.append(typed or "(cleared)")
        assert list(view.table.all_rows) == [f"ins_{int(name[3:]):026d}"], name
    await pilot.press("escape", "escape")
    slowest = sorted(zip(times, typed_keys, strict=True), reverse=True)[:3]
    times.sort()
    p99 = times[max(0, -(-len(times) * 99 // 100) - 1)]
    return {"instance_filter_keys": len(times),
            "instance_filter_p50_s": round(statistics.median(times), 3),
            "instance_filter_p99_s": round(p99, 3), "instance_filter_max_s": round(times[-1], 3),
            "instance_filter_slowest": [f"{k} {t:.3f}" for t, k in slowest],
            "instance_filter_cpu_p50_s": round(statistics.median(cpu), 3)}  # fmt: skip


class Draws:
    """When the app drew its screen (App._display) and when the Hosts view showed fetched rows,
    so a refresh is timed until the screen shows its result rather than until Pilot has seen
    the process sit idle (Pilot.press and Pilot.pause sleep 20 ms at a time to find that out)."""

    def __init__(self, app: FleetApp) -> None:
        self.drawn: list[float] = []
        self.shown: list[float] = []
        display = app._display

        def noted(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is not None:
                self.drawn.append(time.perf_counter())

        app._display = noted  # type: ignore[method-assign]

    def watch(self, view: TableView) -> None:
        show = view.show

        def noted(data: Any) -> None:
            show(data)
            self.shown.append(time.perf_counter())

        view.show = noted  # type: ignore[method-assign]

    def on_screen_since(self, begun: float) -> float:
        """Seconds from begun until the first draw after the last show (which came after begun)."""
        assert self.shown and self.shown[-1] >= begun, "the view showed nothing new"
        return next(t for t in self.drawn if t >= self.shown[-1]) - begun


def dashboard(source: LocalSource) -> FleetApp:
    """The app as `fleet tui` runs it (freeze_heap), without animations."""
    app = FleetApp(source, refresh_seconds=2.0, freeze_heap=True)
    app.animation_level = "none"
    return app


def hosts_view(app: FleetApp) -> HostsView | None:
    return app.screen if isinstance(app.screen, HostsView) else None


async def first_paint(app: FleetApp, started: float, cpu_started: float) -> dict[str, float]:
    """In app.run_test: wait for the Hosts table to show its rows (first_paint_s, and its CPU),
    then for that first fetch to finish (full_load_s); seconds since started / cpu_started."""
    out: dict[str, float] = {}

    def shown() -> bool:
        view = hosts_view(app)
        return view is not None and view.is_mounted and view.table.row_count > 0

    await wait_for(shown)
    out["first_paint_s"] = round(time.perf_counter() - started, 3)
    out["first_paint_cpu_s"] = round(time.process_time() - cpu_started, 3)
    await wait_for(lambda: hosts_view(app) is not None and not hosts_view(app)._busy)  # type: ignore[union-attr]
    out["full_load_s"] = round(time.perf_counter() - started, 3)
    return out


async def drive(source: LocalSource, runs: int, idle: float) -> dict[str, float]:
    app = dashboard(source)
    draws = Draws(app)
    started, cpu_started = time.perf_counter(), time.process_time()
    async with app.run_test(size=(120, 40)) as pilot:
        out = await first_paint(app, started, cpu_started)
        await app.workers.wait_for_complete()
        await pilot.pause()  # the first paint, and the heap frozen after it
        view = hosts_view(app)
        assert view is not None
        draws.watch(view)
        refreshes, with_pilot, cpu = [], [], []
        for _ in range(runs):
            begun, cpu_begun = time.perf_counter(), time.process_time()
            await pilot.press("r")
            await wait_for(lambda: not view._busy)
            await pilot.pause()
            with_pilot.append(time.perf_counter() - begun)
            cpu.append(time.process_time() - cpu_begun)
            refreshes.append(draws.on_screen_since(begun))
        out["refresh_s"] = round(statistics.median(refreshes), 3)
        out["refresh_pilot_s"] = round(statistics.median(with_pilot), 3)
        out["refresh_cpu_s"] = round(statistics.median(cpu), 3)
        out.update(table_times(view))
        await pilot.pause()  # let the redraws of the sorts and filters above finish first
        source.set_draining("big-00001", True)  # a change: the next timed refresh refetches
        begun = time.perf_counter()
        view.request_refresh()
        await wait_for(lambda: not view._busy)
        await pilot.pause()
        out["refresh_after_change_pilot_s"] = round(time.perf_counter() - begun, 3)
        out["refresh_after_change_s"] = round(draws.on_screen_since(begun), 3)
        begun = time.perf_counter()
        view.tick()
        await wait_for(lambda: not view._busy)
        await pilot.pause()
        out["refresh_unchanged_s"] = round(time.perf_counter() - begun, 3)
        out["degraded_view_s"] = await view_switch(app, pilot, "2", DegradedView)
        out["instances_view_s"] = await view_switch(app, pilot, "9", InstancesView)
        out["pools_view_s"] = await view_switch(app, pilot, "0", PoolsView)
        out.update(await filter_times(app, pilot, draws))
        await pilot.press("1")
        await wait_for(lambda: isinstance(app.screen, HostsView) and not app.screen._busy)
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(idle)
        used = time.process_time() - cpu
        out["idle_cpu_percent"] = round(100 * used / (time.perf_counter() - wall), 2)
        out["rows"] = view.table.row_count
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--instances", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fleet.db"
        result: dict[str, Any] = {"hosts": args.hosts, "instances": args.instances}
        result.update(seed(path, args.hosts, args.instances))
        fleet = Fleet.open(f"sqlite:///{path}", clock=FakeClock(NOW))
        source = LocalSource(fleet)
        result.update(api_times(source))
        result.update(asyncio.run(drive(source, args.runs, args.idle)))
        result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        result["targets"] = {"first_paint_s": 1.0, "refresh_s": 0.2, "instances_view_s": 1.0,
                             "refresh_after_change_s": 0.2, "instance_filter_p99_s": 0.3,
                             "idle_cpu_percent": "≈0"}  # fmt: skip
        fleet.close()
    for key, value in result.items():
        print(f"{key:>24}: {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
