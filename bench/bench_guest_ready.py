"""Benchmark of a real guest's time from `fleet instances create` to ready.

    python bench/bench_guest_ready.py [--runs 5]

Runs `fleet serve` and `fleet agent run --hypervisor qemu:///embed?root=…` on the tiny guest
image (tests/support/guest_fleet.py, as the end-to-end test does), then creates, waits for and
deletes one floating 1 GiB instance at a time. Two figures per boot: until the guest's ready
line is on its console (wall clock from the create command: the guest is ready), and the
instance's createdAt to its readyAt (the server sets readyAt at the agent's first "running"
report, which comes as soon as QEMU started, before the guest's ready line). Under TCG always; under KVM too where
KVM boots the stock kernel (tests/support/real_guest.py decides, BCFLEET_REAL_GUEST_ACCEL
forces). Needs scripts/libvirt-host and root. Prints what it measures and, last, one JSON line:
{"runs": 5, "tcg": {"consoleReady": {p50S, minS, maxS}, "readyAt": {…}}, "kvm": … or null}
Measured on a 2-core machine under TCG: console ready p50 7.35 s (6.79–8.15), readyAt 1.4 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import emit  # noqa: E402
from tests.support.guest_fleet import GuestFleet, agent_root, fleet_on  # noqa: E402
from tests.support.real_guest import console_text, qemu_processes, real_host  # noqa: E402
from tests.support.waiting import wait_for, wait_until  # noqa: E402

BOOT_SECONDS = 120


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def one_boot(fleet: GuestFleet) -> tuple[float, float]:
    """(create → ready line on the console, createdAt → readyAt) of one new instance."""
    known = set(fleet.consoles.glob("*.log"))
    started = time.monotonic()
    instance_id = fleet.create("floating")
    log = fleet.new_console(known, timeout=BOOT_SECONDS)
    wait_until(
        lambda: fleet.host.image.ready_line in console_text(log),
        timeout=BOOT_SECONDS,
        what="the ready line",
    )
    console = time.monotonic() - started
    shown = wait_for(
        lambda: (s := fleet.cli("instances", "show", instance_id)).get("readyAt") and s,
        timeout=30,
        what="readyAt",
    )
    fleet.cli("instances", "delete", instance_id)
    wait_until(lambda: not qemu_processes(fleet.host.root), timeout=60, what="the guest to stop")
    return console, seconds_between(shown["createdAt"], shown["readyAt"])


def spread(samples: list[float]) -> dict[str, float]:
    return {
        "p50S": round(statistics.median(samples), 2),
        "minS": round(min(samples), 2),
        "maxS": round(max(samples), 2),
    }


def measure(host: Any, runs: int) -> dict[str, Any]:
    consoles, ready_ats = [], []
    with (
        tempfile.TemporaryDirectory(prefix="bcfleet-bench-") as work,
        agent_root(host) as own,
        fleet_on(own, Path(work) / "fleet") as fleet,
    ):
        for run in range(runs):
            console, ready_at = one_boot(fleet)
            print(f"{host.domain_type} boot {run + 1}: console ready {console:.2f} s, "
                  f"readyAt {ready_at:.2f} s after createdAt")  # fmt: skip
            consoles.append(console)
            ready_ats.append(ready_at)
    return {"consoleReady": spread(consoles), "readyAt": spread(ready_ats)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    result: dict[str, Any] = {"runs": args.runs, "tcg": None, "kvm": None}
    with real_host(hugepages=0) as real:
        result["tcg"] = measure(dataclasses.replace(real, domain_type="qemu"), args.runs)
        if real.domain_type == "kvm":
            result["kvm"] = measure(real, args.runs)
        else:
            print("KVM cannot boot the guest here: TCG only")
    emit(result)


if __name__ == "__main__":
    main()
