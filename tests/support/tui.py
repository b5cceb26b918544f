"""The dashboard tests' fleet: `fleet demo`'s fleet and workloads at a fixed time; and app helpers.

Built once per test process (about three seconds) and copied for each test, so
every snapshot and Pilot test starts from the same bytes, ids and clock.
"""

from __future__ import annotations

import io
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from textual import events
from textual.app import App
from textual.keys import _character_to_key, key_to_character
from textual.pilot import Pilot
from textual.widgets import DataTable

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.api.demo import build_demo
from bcfleet.cli.demo_workloads import populate
from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import tick
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.tui.app import FleetApp
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.source import FleetSource, LocalSource
from bcfleet.tui.widgets.onoff import OnOff
from tests.support.fleet import T0, open_fleet

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
_TEMPLATE: dict[str, Path] = {}


def _extras(fleet: Fleet) -> None:
    """Beyond `fleet demo`: a draining host, a pending reservation, a host that reported later,
    and a preemption under way at T0 (the demo's own happened two hours before)."""
    api = fleet.api
    api.hosts.set_state(OP, host="fra-07", draining=True)
    api.reservations.create(OP, tenant_id="globex", pool_id="gpu-burst", gpus=4, duration="2h",
                            spot=True, idempotency_key="too-big")  # fmt: skip
    api.reservations.create(OP, tenant_id="acme", pool_id="gpu-burst", gpus=3, duration="1h",
                            idempotency_key="eval-run-2")  # fmt: skip
    inventory = api.hosts.show(OP, host="fra-03")["inventory"]
    fleet.clock.advance(seconds=30)  # type: ignore[attr-defined]
    api.hosts.report(OP, host="fra-03", inventory=inventory)


def build_fleet(directory: Path) -> Path:
    """The dashboard's test fleet in directory/fleet.db: built once per process, then copied.

    `fleet demo` two hours before T0, the jobs ticked once at T0 (usage windows, the
    demo's preemption finished), then _extras.
    """
    if "db" not in _TEMPLATE:
        template = directory.parent / "tui-template"
        template.mkdir(exist_ok=True)
        clock = FakeClock(T0 - timedelta(hours=2))
        fleet = open_fleet(f"sqlite:///{template / 'fleet.db'}", clock)
        build_demo(fleet)
        run_vps_hosts(fleet, fleet.now())
        pools = {p["name"]: p["id"] for p in fleet.api.pools.list(OP)["items"]}
        populate(fleet, pools["vps-fra"], pools["vps-ams"])
        fleet.api.usage.setup_meters(OP)
        clock.set(T0)
        tick(fleet, holder="dashboard-tests")
        _extras(fleet)
        fleet.close()
        _TEMPLATE["db"] = template / "fleet.db"
    target = directory / "fleet.db"
    shutil.copy(_TEMPLATE["db"], target)
    return target


LONG_HOST = "fra-rack-a17-slot-04-chassis-7f3c-nvme-l40s-eu-central-eas01"
LONG_TENANT = "research-and-development-platform-engineering-eu-central-001"
LONG_INSTANCE = "training-run-llama-finetune-2026-12-06-checkpoint-resume-004"


def build_long_fleet(directory: Path) -> Path:
    """The test fleet with 60-character names: a host, a tenant with its quota, an instance."""
    path = build_fleet(directory)
    fleet = open_fleet(f"sqlite:///{path}", FakeClock(T0))
    api = fleet.api
    pool = api.pools.show(OP, pool="vps-fra")
    api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name=LONG_HOST)
    api.tenants.create(OP, LONG_TENANT)
    api.pools.offer(OP, tenant_id=str(pool["owner"]), pool="vps-fra", to=LONG_TENANT)
    api.quotas.set(OP, tenant_id=LONG_TENANT, pool="vps-fra", limits={"vcpu": 64, "gpu": 8})
    api.instances.create(OP, tenant_id=LONG_TENANT, pool_id=pool["id"], flavor="g1.small",
                         name=LONG_INSTANCE)  # fmt: skip
    fleet.close()
    return path


def open_test_fleet(path: Path, seconds_later: float = 40.0) -> Fleet:
    """The copied fleet with its clock 40 s after T0 (the preemption's deadline is 1m 20s away)."""
    clock = FakeClock(T0 + timedelta(seconds=seconds_later))
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
    """No key waiting, no worker running, no view waiting for a fetch, no table with widths
    still to measure."""
    keys = app.keys if isinstance(app, FleetApp) else None
    if keys is not None and (keys.busy() or keys.waiting):
        return False
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


async def settle_until(
    pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 60.0
) -> None:
    """settle() until `condition` holds (an action's note may come a settle later on a loaded
    machine); the test's own assertion then says what is missing."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await settle(pilot, timeout=max(deadline - time.monotonic(), 0.1))
        await pilot.pause(0.05)


async def flip(pilot: Any, size: str) -> OnOff:
    """Focus a size's on/off switch and press space on it; the switch."""
    switch: OnOff = pilot.app.screen.query_one(f"#enabled-{size}", OnOff)
    switch.focus()
    await pilot.press("space")
    return switch


def screen_text(app: App[Any]) -> list[str]:
    """The screen as plain text, one string a line."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True,
                      color_system=None, legacy_windows=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


def type_ahead(app: App[Any], keys: list[str]) -> None:
    """Keys as a terminal hands over a paste or a burst: all read before any is handled.

    pilot.press waits for the app to go idle after each key, which no typist, paste or
    SSH link catching up does; this puts every key in the app's queue at once. Keys are
    named as for pilot.press ('a', '/', 'enter').
    """
    driver = app._driver
    assert driver is not None
    for key in keys:
        name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
        event = events.Key(name, key if len(key) == 1 else key_to_character(name))
        event.set_sender(app)
        driver.send_message(event)
