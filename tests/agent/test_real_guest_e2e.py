"""A real guest end to end: a FleetConfig applied, `fleet serve`, and `fleet agent run
--hypervisor qemu:///embed?root=…` running the instances under libvirt's QEMU driver.

Required when CI=true (scripts/libvirt-host, scripts/guest-image); skipped elsewhere without
them. In order: the ready line on the console of a guest with a pinned CPU and huge pages
(every QEMU thread on that CPU, its GiB taken from the huge pages); the CLI shows the instance running and ready;
vps.usage meters it; stop sends ACPI and the guest powers off; a floating guest's balloon
inflates under memory pressure written into the agent's --host-root and deflates once more
than 20 % is free (the guest's MemTotal on its console and the agent's log show it); delete
undefines the domains; no QEMU process is left.

The agent holds its embed root while it runs (one process only, tests/support/guest_fleet.py),
so the test reads the guests through their consoles, the agent's log, the root's files and the
QEMU processes, and opens the root itself only once the agent has exited.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.guest_fleet import (
    GuestFleet,
    agent_root,
    fleet_on,
    last_memtotal,
    owned_domains,
)
from tests.support.real_guest import (
    HUGEPAGE_KIB,
    HUGEPAGES_SYSFS,
    console_text,
    libvirt_module,
    qemu_processes,
    real_host,
)
from tests.support.waiting import wait_for, wait_until

pytestmark = pytest.mark.slow

BOOT_SECONDS = 90  # TCG on two busy cores; a quiet machine is ready in under 10 s
STOP_SECONDS = 40
BALLOON_SECONDS = 60  # memory statistics come every 10 s, then the balloon moves in seconds
MIB_KIB = 1024
GIB_KIB = 1024 * MIB_KIB


def guest_running(fleet: GuestFleet, spec_id: str) -> bool:
    """A QEMU process runs this guest (its domain is active)."""
    return any(
        spec_id.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        for pid in qemu_processes(fleet.host.root)
    )


def qemu_of(fleet: GuestFleet, spec_id: str) -> int:
    return next(
        pid
        for pid in qemu_processes(fleet.host.root)
        if spec_id.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    )


def check_enacted(fleet: GuestFleet, instance_id: str, spec_id: str) -> None:
    """The pinned CPU and the huge pages of the spec are what QEMU got."""
    (cpu,) = fleet.cli("instances", "spec", instance_id)["placement"]["cpus"]
    tasks = Path(f"/proc/{qemu_of(fleet, spec_id)}/task").glob("*/status")
    allowed = {
        cpus for t in tasks for cpus in re.findall(r"Cpus_allowed_list:\s*(\S+)", t.read_text())
    }
    assert allowed == {str(cpu)}, f"every QEMU thread of a pinned guest on CPU {cpu}: {allowed}"
    free = int((HUGEPAGES_SYSFS / "free_hugepages").read_text())
    assert free <= 512 - GIB_KIB // HUGEPAGE_KIB, "its whole GiB comes from the huge pages"


def defined(fleet: GuestFleet, spec_id: str) -> bool:
    """The embed root keeps a persistent domain's definition under etc/qemu."""
    return (fleet.host.root / "etc" / "qemu" / f"{spec_id}.xml").exists()


def boot(fleet: GuestFleet, flavor: str) -> tuple[str, str, Path]:
    """Create an instance; its id, its spec id and its console log once ready."""
    known = set(fleet.consoles.glob("*.log"))
    instance_id = fleet.create(flavor)
    log = fleet.new_console(known, timeout=BOOT_SECONDS)
    wait_until(
        lambda: fleet.host.image.ready_line in console_text(log),
        timeout=BOOT_SECONDS,
        what=f"the ready line on the console ({log})",
    )
    return instance_id, log.stem, log


def check_running_metered_and_stopped(fleet: GuestFleet, instance_id: str, log: Path) -> None:
    shown = wait_for(
        lambda: (s := fleet.cli("instances", "show", instance_id)).get("readyAt") and s,
        timeout=30,
        what="readyAt in `fleet instances show`",
    )
    assert shown["state"] == "running"
    # vps.usage meters closed 5-minute windows: the tick runs as if a quarter of an hour later.
    later = datetime.now(UTC) + timedelta(minutes=15)
    fleet.cli("jobs", "tick", "--job", "vps.usage", now=later.strftime("%Y-%m-%dT%H:%M:%SZ"))
    metered = fleet.cli("usage", "list", "--tenant", "root", "--subject", instance_id)["items"]
    assert metered, "vps.usage metered the running instance"
    fleet.cli("instances", "stop", instance_id)
    wait_until(
        lambda: (
            "bcfleet-guest powering off" in console_text(log) and not guest_running(fleet, log.stem)
        ),
        timeout=STOP_SECONDS,
        what="the guest to power off on ACPI",
    )
    assert defined(fleet, log.stem), "stopped, still defined"
    assert fleet.cli("instances", "show", instance_id)["state"] == "stopped"


def check_balloon(fleet: GuestFleet, spec_id: str, log: Path) -> None:
    booted = wait_for(lambda: last_memtotal(log), timeout=10, what="the guest's MemTotal")
    fleet.memory(available_percent=5)  # short: under 10 % available
    wait_until(
        lambda: (last_memtotal(log) or booted) <= booted - 256 * MIB_KIB,
        timeout=BALLOON_SECONDS,
        what="the balloon to inflate (the guest's MemTotal falls)",
    )
    inflated = re.findall(
        rf"{spec_id}: balloon target (\d+) KiB \(inflate", fleet.agent_log.read_text()
    )
    assert inflated, "the agent says what it set"
    fleet.memory(available_percent=15)  # between 10 and 20 %: nothing moves back
    fleet.memory(available_percent=50)  # more than 20 % free: given back
    wait_until(
        lambda: last_memtotal(log) == booted,
        timeout=BALLOON_SECONDS,
        what="the balloon to deflate (the guest's MemTotal back to its boot value)",
    )
    assert f"{spec_id}: balloon target {1024 * MIB_KIB} KiB (deflate" in fleet.agent_log.read_text()


def test_a_real_guest_runs_is_metered_stops_balloons_and_is_deleted(tmp_path: Path) -> None:
    libvirt_module()
    with real_host(hugepages=512) as real, agent_root(real) as host:
        with fleet_on(host, tmp_path / "fleet") as fleet:
            pinned, pinned_spec, pinned_log = boot(fleet, "pinned")
            check_enacted(fleet, pinned, pinned_spec)
            check_running_metered_and_stopped(fleet, pinned, pinned_log)
            floating, floating_spec, floating_log = boot(fleet, "floating")
            check_balloon(fleet, floating_spec, floating_log)
            for instance_id in (pinned, floating):
                fleet.cli("instances", "delete", instance_id)
            wait_until(
                lambda: not defined(fleet, pinned_spec) and not defined(fleet, floating_spec),
                timeout=STOP_SECONDS,
                what="the agent to undefine the deleted guests",
            )
            assert not qemu_processes(host.root)
        assert owned_domains(host.uri) == []
        assert not qemu_processes(host.root)
