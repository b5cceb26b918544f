"""`fleet agent run --no-disk`: guests without a disk, for a libvirt URI without storage pools
(qemu:///embed has no storage driver); they boot --kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.domain.instance_spec import HostDomain, instance_spec, render_libvirt_domain
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape
from tests.support.fleet import run_cli
from tests.support.libvirt_test_driver import libvirt_or_skip

SPEC = instance_spec(
    instance_id="ins_a",
    name="a",
    state="running",
    shape=Shape(vcpu=1, memory_gib=1, disk_gib=10),
    placement=HostPlacement(cpus=None, cpuset=(1,)),
)
DISKLESS = HostDomain(storage_pool=None, kernel="/boot/vmlinuz", initrd="/boot/initrd")


@pytest.mark.parametrize(
    "host, disks",
    [
        pytest.param(HostDomain(), 1, id="a-volume-of-the-pool"),
        pytest.param(DISKLESS, 0, id="no-disk"),
    ],
)
def test_the_domain_has_a_disk_only_with_a_storage_pool(host: HostDomain, disks: int) -> None:
    assert render_libvirt_domain(SPEC, host).count("<disk ") == disks


def test_a_diskless_guest_starts_on_a_host_without_storage_pools(tmp_path: Path) -> None:
    libvirt = libvirt_or_skip()
    from bcfleet.agent.libvirt_driver import LibvirtDriver
    from bcfleet.agent.libvirt_events import start_event_loop

    (tmp_path / "node.xml").write_text("<node/>")  # no storage pool at all
    start_event_loop()
    conn = libvirt.open(f"test://{tmp_path / 'node.xml'}")
    try:
        driver = LibvirtDriver.on(conn, host=DISKLESS)
        assert ("ins_a", "running") in driver.converge([SPEC], 0)
        assert driver.problems() == {}
        driver.converge([], 1)
        driver.converge([], 2)
        assert conn.listAllDomains() == []
    finally:
        conn.close()


def test_no_disk_needs_a_kernel_to_boot() -> None:
    result = run_cli("agent", "run", "--server", "http://127.0.0.1:9", "--token", "bcf_x",
                     "--hypervisor", "test:///default", "--no-disk", "--once")  # fmt: skip
    assert result.exit_code == 1
    assert "--no-disk needs --kernel" in result.stderr
