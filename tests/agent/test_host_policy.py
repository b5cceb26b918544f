"""The libvirt driver's memory hooks (bcfleet.agent.host_policy) on libvirt's test driver: a
short host inflates balloons with setMemory and a free one deflates them; a huge-page start the
free pages cannot back is refused with the shortfall; two starts in one round never count the
same free pages. The host is a fake /proc and /sys tree, as `fleet agent run --host-root`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bcfleet.agent.host_policy import HostPolicy
from bcfleet.agent.runner import Agent, AgentOptions
from bcfleet.domain.instance_spec import InstanceSpecJson, instance_spec
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape
from tests.support.libvirt_test_driver import libvirt_or_skip

libvirt = libvirt_or_skip()

from bcfleet.agent.libvirt_driver import GuestMemory, LibvirtDriver  # noqa: E402

GIB_KIB = 1024 * 1024
HOST_KIB = 16 * GIB_KIB
PAGE_KIB = 2048


@dataclass
class FakeHost:
    """A /proc and /sys tree below `root` that a test rewrites between rounds."""

    root: Path

    def memory(self, available_kib: int, avg10: float = 0.0) -> None:
        (self.root / "proc/pressure").mkdir(parents=True, exist_ok=True)
        (self.root / "proc/meminfo").write_text(
            f"MemTotal:       {HOST_KIB} kB\nMemFree:        {available_kib} kB\n"
            f"MemAvailable:   {available_kib} kB\n"
        )
        (self.root / "proc/pressure/memory").write_text(
            f"some avg10={avg10:.2f} avg60=0.00 avg300=0.00 total=0\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        )

    def hugepages(self, free: int, total: int = 1024) -> None:
        pool = self.root / "sys/devices/system/node/node0/hugepages/hugepages-2048kB"
        pool.mkdir(parents=True, exist_ok=True)
        (pool / "nr_hugepages").write_text(f"{total}\n")
        (pool / "free_hugepages").write_text(f"{free}\n")


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    fake = FakeHost(tmp_path / "host")
    fake.memory(available_kib=HOST_KIB // 2)
    fake.hugepages(free=1024)
    return fake


def floating(instance_id: str) -> InstanceSpecJson:
    return instance_spec(
        instance_id=instance_id,
        name=instance_id,
        state="running",
        shape=Shape(vcpu=1, memory_gib=1, disk_gib=1),
        placement=HostPlacement(cpus=None, cpuset=(2, 3), balloon=True),
    )


def huge(instance_id: str, cpu: int = 2) -> InstanceSpecJson:
    return instance_spec(
        instance_id=instance_id,
        name=instance_id,
        state="running",
        shape=Shape(vcpu=1, memory_gib=1, disk_gib=1),
        placement=HostPlacement(cpus=(cpu,), cpuset=(cpu,), mems=(0,), hugepage_size_bytes=2 << 20),
    )


def current_kib(conn: Any, name: str) -> int:
    return int(conn.lookupByName(name).info()[2])


def test_a_short_host_inflates_a_balloon_with_set_memory_and_a_free_one_deflates_it(
    conn: Any, host: FakeHost
) -> None:
    policy = HostPolicy(host.root)
    driver = LibvirtDriver.on(conn, balloon=policy.balloon, admit=policy.admit)
    driver.converge([floating("ins_a")], 0)  # defined and started at full size
    driver.converge([floating("ins_a")], 1)  # 50 % available: nothing moves
    assert current_kib(conn, "ins_a") == GIB_KIB
    host.memory(available_kib=HOST_KIB // 20)  # 5 % available: short
    driver.converge([floating("ins_a")], 2)
    # The test driver's guest uses half its memory: its floor is that use plus 10 %.
    floor_kib = -(-GIB_KIB // 2 * 110 // 100)
    assert current_kib(conn, "ins_a") == floor_kib
    assert policy.balloons == {"ins_a": floor_kib}
    host.memory(available_kib=HOST_KIB * 15 // 100)  # 15 %: the band in between, nothing moves
    driver.converge([floating("ins_a")], 3)
    assert current_kib(conn, "ins_a") == floor_kib
    host.memory(available_kib=HOST_KIB // 2)  # over 20 % free: given back
    driver.converge([floating("ins_a")], 4)
    assert current_kib(conn, "ins_a") == GIB_KIB


def test_memory_pressure_alone_makes_the_host_short(conn: Any, host: FakeHost) -> None:
    policy = HostPolicy(host.root)
    driver = LibvirtDriver.on(conn, balloon=policy.balloon)
    driver.converge([floating("ins_a")], 0)
    host.memory(available_kib=HOST_KIB // 2, avg10=12.5)
    driver.converge([floating("ins_a")], 1)
    assert current_kib(conn, "ins_a") < GIB_KIB


def test_huge_page_guests_are_never_ballooned(conn: Any, host: FakeHost) -> None:
    policy = HostPolicy(host.root)
    driver = LibvirtDriver.on(conn, balloon=policy.balloon, admit=policy.admit)
    driver.converge([huge("ins_h")], 0)
    host.memory(available_kib=HOST_KIB // 20)
    driver.converge([huge("ins_h")], 1)
    assert current_kib(conn, "ins_h") == GIB_KIB
    assert policy.balloons == {}


@dataclass(frozen=True)
class Sample:
    """A running guest as the driver hands it to the balloon hook."""

    instance_id: str
    spec: InstanceSpecJson
    balloon_kib: int
    stats: dict[str, int]


def sample(instance_id: str, at: int, faults: int) -> Sample:
    stats = {"actual": GIB_KIB, "available": GIB_KIB, "usable": GIB_KIB * 3 // 4,
             "major_fault": faults, "swap_in": 0, "last_update": at}  # fmt: skip
    return Sample(instance_id, floating(instance_id), GIB_KIB, stats)


def test_the_idle_guest_gives_first_judged_from_its_previous_sample(host: FakeHost) -> None:
    policy = HostPolicy(host.root)
    assert policy.balloon([sample("ins_busy", 100, 0), sample("ins_idle", 100, 0)]) == {}
    host.memory(available_kib=HOST_KIB // 10 - 1024)  # short by a little: one guest is enough
    targets = policy.balloon([sample("ins_busy", 110, 500), sample("ins_idle", 110, 0)])
    assert set(targets) == {"ins_idle"} and targets["ins_idle"] < GIB_KIB


def test_idleness_compares_samples_taken_at_different_times(host: FakeHost) -> None:
    policy = HostPolicy(host.root)
    policy.balloon([sample("ins_busy", 100, 0), sample("ins_idle", 100, 0)])
    policy.balloon([sample("ins_busy", 110, 500), sample("ins_idle", 110, 0)])
    host.memory(available_kib=HOST_KIB // 10 - 1024)
    # The next round comes before QEMU refreshed the statistics: the same sample again.
    targets = policy.balloon([sample("ins_busy", 110, 500), sample("ins_idle", 110, 0)])
    assert set(targets) == {"ins_idle"}


def test_without_a_previous_sample_no_guest_counts_as_idle(host: FakeHost) -> None:
    host.memory(available_kib=HOST_KIB // 10 - 1024)
    targets = HostPolicy(host.root).balloon([sample("ins_b", 110, 500), sample("ins_c", 110, 0)])
    assert set(targets) == {"ins_b"}, "both busy: by id"


def test_a_huge_page_start_the_free_pages_cannot_back_is_refused_with_the_shortfall(
    tmp_path: Path, host: FakeHost, node: str
) -> None:
    host.hugepages(free=100)
    options = AgentOptions("fra-01", hypervisor_uri=node, host_root=str(host.root))
    agent = Agent(connection=None, options=options)  # type: ignore[arg-type]  # no rounds
    assert agent.hypervisor is not None
    try:
        assert agent.hypervisor.converge([huge("ins_h")], 0) == [("ins_h", "stopped")]
        assert agent.hypervisor.problems() == {
            "ins_h": "StartRefused (NotEnoughHugepages): huge pages: needs 512 × 2MiB pages "
            "on NUMA node 0, 100 free; the guest is not started"
        }
        host.hugepages(free=600)  # asked again next round
        assert ("ins_h", "running") in agent.hypervisor.converge([huge("ins_h")], 1)
        assert agent.hypervisor.problems() == {}
    finally:
        agent.hypervisor.close()


def test_two_starts_in_one_round_do_not_take_the_same_free_pages(conn: Any, host: FakeHost) -> None:
    host.hugepages(free=600)  # backs one 1 GiB guest (512 pages), not two
    policy = HostPolicy(host.root)
    driver = LibvirtDriver.on(conn, balloon=policy.balloon, admit=policy.admit)
    driver.converge([huge("ins_a", cpu=2), huge("ins_b", cpu=3)], 0)
    running = {d.name() for d in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)}
    assert running == {"ins_a"}
    assert driver.problems() == {
        "ins_b": "StartRefused (NotEnoughHugepages): huge pages: needs 512 × 2MiB pages "
        "on NUMA node 0, 88 free; the guest is not started"
    }


def test_the_driver_hands_the_hook_its_guest_memory(conn: Any, host: FakeHost) -> None:
    seen: list[GuestMemory] = []
    policy = HostPolicy(host.root)

    def balloon(guests: Any) -> dict[str, int]:
        seen.extend(guests)
        return policy.balloon(guests)

    driver = LibvirtDriver.on(conn, balloon=balloon)
    driver.converge([floating("ins_a")], 0)
    driver.converge([floating("ins_a")], 1)
    assert policy.samples == {"ins_a": seen[-1].stats}
