"""The dashboard tests' fleet: the demo fleet, synced and with guests, at a fixed time; and app helpers.

Built once per test process (about three seconds) and copied for each test, so
every snapshot and Pilot test starts from the same bytes, ids and clock.
"""

from __future__ import annotations

import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.api.demo import build_demo
from bcfleet.clock import FakeClock
from bcfleet.domain.compute_settings import (
    ComputeChange,
    ComputeSettings,
    SizeUsers,
    apply_change,
    users_of_size,
)
from bcfleet.domain.simulated_inventory import simulated_inventory
from bcfleet.domain.sizes import SIZE_NAMES
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.placement import candidates
from bcfleet.tui.app import FleetApp
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.source import ComputeSnapshot, FleetSource, LocalSource, SaveOutcome
from tests.conftest import T0, open_fleet

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
_TEMPLATE: dict[str, Path] = {}


def _guests(fleet: Fleet) -> None:
    """Instances on the demo's pools, and a lab pool whose hosts can only run them degraded."""
    api = fleet.api
    for i in range(12):
        api.instances.create(
            OP, tenant_id="acme", pool_id="vps-fra", flavor="g1.large", name=f"web-{i:02d}"
        )
    for i in range(6):
        api.instances.create(
            OP, tenant_id="acme", pool_id="vps-fra", flavor="gpu1.l40s", name=f"train-{i}"
        )
    for i in range(4):
        api.instances.create(
            OP, tenant_id="globex", pool_id="vps-fra", flavor="g1.medium", name=f"db-{i}"
        )
    lab = api.pools.create(OP, tenant_id="root", name="vps-lab", kind="vps-host", gpu_model="L40S")
    api.pools.offer(OP, tenant_id="root", pool=lab["id"], to="acme")
    for name, shape in (("lab-01", "no-numa"), ("lab-02", "gpu-numa-unknown")):
        api.hosts.adopt(OP, tenant_id="root", pool=lab["id"], name=name, labels=PLACEMENT)
        api.hosts.report(OP, host=name, inventory=simulated_inventory(shape, seed=3, hostname=name))
    api.flavors.create(OP, tenant_id="root", pool_id=lab["id"], name="gpu1.pinned", vcpu=4,
                       memory_gib=16, disk_gib=100, gpus=1,
                       placement={"numaAffine": True, "pinned": True})  # fmt: skip
    api.flavors.create(OP, tenant_id="root", pool_id=lab["id"], name="c1.pinned", vcpu=4,
                       memory_gib=8, disk_gib=40,
                       placement={"numaAffine": True, "pinned": True})  # fmt: skip
    run_vps_hosts(fleet, fleet.now())
    for i in range(3):
        api.instances.create(
            OP, tenant_id="acme", pool_id="vps-lab", flavor="gpu1.pinned", name=f"lab-{i}"
        )
    for i in range(4):
        api.instances.create(
            OP, tenant_id="acme", pool_id="vps-lab", flavor="c1.pinned", name=f"pin-{i}"
        )


def build_fleet(directory: Path) -> Path:
    """The dashboard's test fleet in directory/fleet.db: built once, then copied."""
    if "db" not in _TEMPLATE:
        template = directory.parent / "tui-template"
        template.mkdir(exist_ok=True)
        # Placement's rotating start is kept per process and pool id, and seeded ids repeat
        # across tests: start it afresh so the guests land where they always do.
        candidates._cursors.clear()
        clock = FakeClock(T0)
        fleet = open_fleet(f"sqlite:///{template / 'fleet.db'}", clock)
        build_demo(fleet)
        clock.advance(minutes=3)
        run_vps_hosts(fleet, fleet.now())
        _guests(fleet)
        clock.advance(seconds=40)
        fleet.api.hosts.report(
            OP, host="fra-03", inventory=fleet.api.hosts.show(OP, host="fra-03")["inventory"]
        )
        fleet.api.hosts.set_state(OP, host="fra-07", draining=True)
        fleet.close()
        _TEMPLATE["db"] = template / "fleet.db"
    target = directory / "fleet.db"
    shutil.copy(_TEMPLATE["db"], target)
    return target


def open_test_fleet(path: Path, minutes_later: float = 1.0) -> Fleet:
    """The copied fleet with its clock a little after the last change (ages read 1m, 4m…)."""
    clock = FakeClock(T0 + timedelta(minutes=4, seconds=40) + timedelta(minutes=minutes_later))
    return open_fleet(f"sqlite:///{path}", clock)


def make_app(source: FleetSource, **options: Any) -> FleetApp:
    """An app that never refreshes by itself (tests press r), without animations."""
    options.setdefault("refresh_seconds", 0)
    options.setdefault("cursor_blink", False)
    app = FleetApp(source, **options)
    app.animation_level = "none"
    return app


def local_app(path: Path, **options: Any) -> tuple[FleetApp, Fleet]:
    fleet = open_test_fleet(path)
    return make_app(LocalSource(fleet, label="sqlite:///fleet.db"), **options), fleet


def _quiet(app: App[Any]) -> bool:
    """No worker running, no view waiting for a fetch, no table with widths still to measure."""
    if any(w.is_running for w in app.workers):
        return False
    if any(isinstance(s, ViewScreen) and s._busy for s in app.screen_stack):
        return False
    return not any(t._require_update_dimensions or t._new_rows for t in app.screen.query(DataTable))


async def settle(pilot: Pilot[Any], timeout: float = 60.0) -> None:
    """Wait until every fetch has come back and been drawn (a loaded machine may take seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if _quiet(pilot.app):
            break
        await pilot.pause(0.02)
    await pilot.pause()


class ComputeFake(LocalSource):
    """The local fleet, plus compute settings kept in memory under the domain's save rules.

    Stands in for the compute settings API in tests until that API is in this build:
    what it decides is exactly bcfleet.domain.compute_settings.apply_change.
    """

    def __init__(self, fleet: Fleet, users: SizeUsers | None = None, **kwargs: Any) -> None:
        super().__init__(fleet, label="sqlite:///fleet.db", **kwargs)
        self.stored: dict[str, ComputeSettings] = {}
        self.users = users or SizeUsers()
        self.load_failures = 0

    def compute_settings(self, tenant: str) -> ComputeSnapshot:
        if self.load_failures:
            self.load_failures -= 1
            raise OSError("connection refused")
        settings = self.stored.get(tenant, ComputeSettings())
        using = {s: users_of_size(s, self.users) for s in SIZE_NAMES}
        return ComputeSnapshot(tenant, settings, {s: u for s, u in using.items() if u})

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome:
        result = apply_change(self.stored.get(tenant, ComputeSettings()), desired, self.users)
        self.stored[tenant] = result.settings
        return SaveOutcome(
            result.settings, result.message, tuple(n.message for n in result.notices)
        )
