"""A real guest boots from bcfleet's own domain XML under libvirt's QEMU driver (no agent yet).

Required when CI=true (scripts/libvirt-host, scripts/guest-image); skipped elsewhere without
them. Guards the ground the agent's libvirt driver stands on: the rendered XML defines and
starts, pins and huge pages are enacted, the balloon reaches the guest, ACPI stops it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from bcfleet.domain.instance_spec import instance_spec, render_libvirt_domain
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape
from tests.support.real_guest import (
    HUGEPAGE_KIB,
    HUGEPAGES_SYSFS,
    RealHost,
    adapt_domain,
    closed_connection,
    console_text,
    libvirt_module,
    qemu_processes,
    real_host,
)
from tests.support.waiting import wait_for, wait_until

pytestmark = pytest.mark.slow

GIB_KIB = 1024 * 1024
BOOT_SECONDS = 90  # TCG on two busy cores; a quiet machine is ready in under 10 s
STOP_SECONDS = 30
BALLOON_SECONDS = 60  # the balloon moves 512 MiB in a few seconds when the machine is quiet
MEMTOTAL = re.compile(r"bcfleet-guest memtotal-kib (\d+)")


def free_hugepages() -> int:
    return int((HUGEPAGES_SYSFS / "free_hugepages").read_text())


def last_memtotal(log: Path) -> int | None:
    found = MEMTOTAL.findall(console_text(log))
    return int(found[-1]) if found else None


def pinned_placement(cpu: int) -> HostPlacement:
    return HostPlacement(cpus=(cpu,), cpuset=(cpu,), mems=(0,), hugepage_size_bytes=2 << 20)


def floating_placement(cpu: int) -> HostPlacement:
    return HostPlacement(cpus=None, cpuset=(cpu,), balloon=True)


def check_pinned(domain: Any, cpu: int, libvirt: Any) -> None:
    assert domain.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)[0][cpu]
    assert sum(domain.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)[0]) == 1
    # The whole GiB comes from the huge pages reserved for the test.
    assert free_hugepages() <= 512 - GIB_KIB // HUGEPAGE_KIB


def check_balloon(domain: Any, log: Path, libvirt: Any) -> None:
    booted = wait_for(lambda: last_memtotal(log), timeout=10, what="the guest's MemTotal")
    domain.setMemoryFlags(GIB_KIB // 2, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    wait_until(
        lambda: (
            domain.memoryStats()["actual"] == GIB_KIB // 2
            and (last_memtotal(log) or booted) <= booted - GIB_KIB // 2 + 16 * 1024
        ),
        timeout=BALLOON_SECONDS,
        what="the balloon to take half the guest's memory (dommemstat and MemTotal)",
    )
    domain.setMemoryFlags(GIB_KIB, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    wait_until(
        lambda: domain.memoryStats()["actual"] == GIB_KIB and last_memtotal(log) == booted,
        timeout=BALLOON_SECONDS,
        what="the balloon to give it back",
    )


@pytest.mark.parametrize(
    "placement, check",
    [
        pytest.param(pinned_placement, "pinned", id="pinned-huge-pages"),
        pytest.param(floating_placement, "balloon", id="floating-balloon"),
    ],
)
def test_a_rendered_domain_boots_is_enacted_and_stops_on_acpi(placement: Any, check: str) -> None:
    libvirt = libvirt_module()
    cpu = max(os.sched_getaffinity(0))
    spec = instance_spec(
        instance_id=f"gst_smoke_{check}",
        name=f"smoke-{check}",
        state="running",
        shape=Shape(vcpu=1, memory_gib=1, disk_gib=1),
        placement=placement(cpu),
    )
    with real_host(hugepages=512) as host:
        boot_and_stop(host, render_libvirt_domain(spec), spec["id"], check, cpu, libvirt)
        assert not qemu_processes(host.root)


def boot_and_stop(host: RealHost, xml: str, name: str, check: str, cpu: int, libvirt: Any) -> None:
    log = host.console_log(name)
    with closed_connection(libvirt, host.uri) as connection:
        domain = connection.defineXML(adapt_domain(xml, host, log))
        try:
            domain.create()
            wait_until(
                lambda: host.image.ready_line in console_text(log) or not domain.isActive(),
                timeout=BOOT_SECONDS,
                what=f"the ready line on the console ({log})",
            )
            assert host.image.ready_line in console_text(log), console_text(log)[-2000:]
            if check == "pinned":
                check_pinned(domain, cpu, libvirt)
            else:
                check_balloon(domain, log, libvirt)
            domain.shutdown()  # ACPI power button
            wait_until(lambda: not domain.isActive(), timeout=STOP_SECONDS, what="ACPI shutdown")
            state, reason = domain.state()
            assert (state, reason) == (
                libvirt.VIR_DOMAIN_SHUTOFF,
                libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN,
            )
            assert "bcfleet-guest powering off" in console_text(log)
        finally:
            if domain.isActive():
                domain.destroy()
            domain.undefine()
        assert name not in connection.listDefinedDomains()
