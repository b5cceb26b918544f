"""The libvirt driver on libvirt's test driver (test:///default, in process): lifecycle, events,
ownership, adoption after an agent restart, and the bad days."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from bcfleet.domain.instance_spec import HostDomain, InstanceSpecJson, instance_spec
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape
from tests.support.libvirt_test_driver import libvirt_or_skip

libvirt = libvirt_or_skip()

from bcfleet.agent.libvirt_domains import domain_xml  # noqa: E402
from bcfleet.agent.libvirt_driver import LibvirtDriver  # noqa: E402
from bcfleet.agent.libvirt_events import start_event_loop  # noqa: E402

FOREIGN = """<domain type="test"><name>{name}</name><memory unit="KiB">65536</memory>
<os><type>hvm</type></os></domain>"""


def guest(
    instance_id: str, state: str = "running", cpuset: tuple[int, ...] = (2, 3)
) -> InstanceSpecJson:
    return instance_spec(
        instance_id=instance_id,
        name=instance_id,
        state=state,
        shape=Shape(vcpu=2, memory_gib=1, disk_gib=10),
        placement=HostPlacement(cpus=None, cpuset=cpuset, balloon=True),
    )


def foreign(conn: Any, name: str = "theirs") -> tuple[Any, str]:
    """A domain bcfleet did not define, and its XML before any round."""
    domain = conn.defineXML(FOREIGN.format(name=name))
    domain.create()
    return domain, domain.XMLDesc(0)


def state(conn: Any, name: str) -> int:
    return int(conn.lookupByName(name).state()[0])


def test_guests_are_defined_started_stopped_and_undefined_and_reported(conn: Any) -> None:
    driver = LibvirtDriver.on(conn)
    assert driver.converge([guest("ins_a")], 0) == [("ins_a", "running"), ("ins_a", "ready")]
    assert state(conn, "ins_a") == libvirt.VIR_DOMAIN_RUNNING
    assert driver.converge([guest("ins_a")], 1) == []  # reports changes only
    assert driver.converge([guest("ins_a", "stopped")], 2) == [("ins_a", "stopped")]
    assert state(conn, "ins_a") == libvirt.VIR_DOMAIN_SHUTOFF
    assert driver.converge([guest("ins_a")], 3) == [("ins_a", "running"), ("ins_a", "ready")]
    assert driver.problems() == {}, "a start after bcfleet's own stop is no outside stop"
    driver.converge([], 4)  # deleted: shut down
    driver.converge([], 5)  # then undefined
    assert [d.name() for d in conn.listAllDomains()] == []
    assert driver.problems() == {}


def test_foreign_domains_are_never_touched_or_reported(conn: Any) -> None:
    theirs, before = foreign(conn)
    stopped = conn.defineXML(FOREIGN.format(name="theirs-stopped"))
    driver = LibvirtDriver.on(conn)
    reports = []
    for now, specs in enumerate([[guest("ins_a")], [guest("ins_a", "stopped")], [], [], []]):
        reports += driver.converge(specs, float(now))
    assert {instance for instance, _ in reports} == {"ins_a"}
    assert theirs.state()[0] == libvirt.VIR_DOMAIN_RUNNING and theirs.XMLDesc(0) == before
    assert stopped.state()[0] == libvirt.VIR_DOMAIN_SHUTOFF
    assert set(driver.problems()) == set()


def test_a_floating_guests_new_cpu_set_is_pinned_live(conn: Any) -> None:
    driver = LibvirtDriver.on(conn)
    driver.converge([guest("ins_a", cpuset=(2, 3))], 0)
    domain = conn.lookupByName("ins_a")
    started = domain.ID()
    driver.converge([guest("ins_a", cpuset=(4, 5, 6))], 1)
    pins = domain.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)
    assert {cpu for row in pins for cpu, on in enumerate(row) if on} == {4, 5, 6}
    emulator = domain.emulatorPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)
    assert {cpu for cpu, on in enumerate(emulator) if on} == {4, 5, 6}
    assert domain.ID() == started, "re-pinned live, not restarted"


def test_a_resized_guest_is_redefined_and_runs_its_new_size_from_its_next_start(conn: Any) -> None:
    driver = LibvirtDriver.on(conn)
    driver.converge([guest("ins_a")], 0)
    bigger = guest("ins_a")
    bigger["shape"]["memoryGiB"] = 2
    driver.converge([bigger], 1)
    domain = conn.lookupByName("ins_a")
    assert domain.info()[1] == 1024 * 1024, "the running guest keeps its size"
    driver.converge([{**bigger, "state": "stopped"}], 2)
    driver.converge([bigger], 3)
    assert domain.info()[1] == 2 * 1024 * 1024


def test_a_balloon_decider_target_is_applied_with_set_memory(conn: Any) -> None:
    seen: list[Any] = []

    def balloon(guests: Any) -> dict[str, int]:
        seen.extend(guests)
        return {g.instance_id: 512 * 1024 for g in guests}

    driver = LibvirtDriver.on(conn, balloon=balloon)
    driver.converge([guest("ins_a")], 0)
    driver.converge([guest("ins_a")], 1)
    assert conn.lookupByName("ins_a").info()[2] == 512 * 1024
    assert seen[0].instance_id == "ins_a" and "actual" in seen[0].stats


def test_an_admission_refusal_keeps_the_guest_off_with_a_condition(conn: Any) -> None:
    driver = LibvirtDriver.on(conn, admit=lambda spec: "short of 512 2 MiB pages on node 0")
    assert driver.converge([guest("ins_a")], 0) == [("ins_a", "stopped")]
    assert driver.problems() == {"ins_a": "short of 512 2 MiB pages on node 0"}
    assert state(conn, "ins_a") == libvirt.VIR_DOMAIN_SHUTOFF


def test_a_guest_destroyed_outside_is_seen_by_an_event_and_started_again_after_a_backoff(
    conn: Any,
) -> None:
    driver = LibvirtDriver.on(conn)
    driver.converge([guest("ins_a")], 0)
    assert driver.link.seen is not None
    driver.link.seen.wake.clear()
    conn.lookupByName("ins_a").destroy()
    assert driver.link.seen.wake.wait(5), "a lifecycle event wakes the agent"
    assert driver.converge([guest("ins_a")], 1) == [("ins_a", "stopped")]
    assert "destroyed" in driver.problems()["ins_a"]
    assert state(conn, "ins_a") == libvirt.VIR_DOMAIN_SHUTOFF, "not restarted before the backoff"
    assert driver.converge([guest("ins_a")], 7) == [("ins_a", "running"), ("ins_a", "ready")]


def test_a_restarted_agent_adopts_its_domains_and_starts_nothing_twice(conn: Any) -> None:
    before = LibvirtDriver.on(conn)
    before.converge([guest("ins_running")], 0)
    before.close()  # killed: its event callback goes with it
    running_id = conn.lookupByName("ins_running").ID()
    conn.defineXML(
        domain_xml(guest("ins_defined"), None, HostDomain())
    )  # killed between define and start
    specs = [guest("ins_running"), guest("ins_defined")]
    restarted = LibvirtDriver.on(conn)
    for now in range(3):
        restarted.converge(specs, float(now))
    assert restarted.problems() == {}
    assert conn.lookupByName("ins_running").ID() == running_id
    assert state(conn, "ins_defined") == libvirt.VIR_DOMAIN_RUNNING
    assert sorted(conn.listDefinedDomains()) == []


def test_a_domain_whose_instance_is_gone_is_shut_down_and_undefined(conn: Any) -> None:
    before = LibvirtDriver.on(conn)
    before.converge([guest("ins_gone"), guest("ins_kept")], 0)
    before.close()
    restarted = LibvirtDriver.on(conn)  # the instance was deleted while the agent was down
    reports = restarted.converge([guest("ins_kept")], 1) + restarted.converge(
        [guest("ins_kept")], 2
    )
    assert "ins_gone" not in [d.name() for d in conn.listAllDomains()]
    assert "ins_gone" not in {instance for instance, _ in reports}
    assert state(conn, "ins_kept") == libvirt.VIR_DOMAIN_RUNNING


def test_a_define_libvirt_refuses_gives_a_condition_and_the_others_go_on(conn: Any) -> None:
    theirs, before = foreign(conn, "ins_clash")  # a name libvirt already holds
    driver = LibvirtDriver.on(conn)
    driver.converge([guest("ins_clash"), guest("ins_ok")], 0)
    assert "already exists" in driver.problems()["ins_clash"]
    assert state(conn, "ins_ok") == libvirt.VIR_DOMAIN_RUNNING
    assert theirs.XMLDesc(0) == before and theirs.state()[0] == libvirt.VIR_DOMAIN_RUNNING


def test_libvirt_unreachable_degrades_the_host_reconnects_with_backoff_and_leaves_guests_running(
    node: str,
) -> None:
    start_event_loop()
    host = libvirt.open(node)  # the host's libvirt once it is back
    host.defineXML(domain_xml(guest("ins_a"), None, HostDomain())).create()
    running_id = host.lookupByName("ins_a").ID()
    opens = itertools.count()

    def opener() -> Any:
        if next(opens) < 1:
            raise libvirt.libvirtError("Failed to connect socket: Connection refused")
        return host

    lost = libvirt.open(node)
    driver = LibvirtDriver.on(lost)
    driver.opener = opener
    lost.close()  # libvirtd went away under the agent
    assert driver.converge([guest("ins_a")], 0) == []
    assert driver.degraded and "libvirt unreachable" in driver.problems()["host"]
    assert driver.converge([guest("ins_a")], 0.5) == [], "waits its backoff (1 s)"
    assert driver.converge([guest("ins_a")], 1) == [] and driver.degraded  # 2nd open fails
    assert driver.link.retry_at == 3, "the backoff doubles"
    assert driver.converge([guest("ins_a")], 3) == [("ins_a", "running"), ("ins_a", "ready")]
    assert not driver.degraded
    assert host.lookupByName("ins_a").ID() == running_id, "the running guest was left running"
    host.close()


def test_a_guests_disk_is_made_at_its_start_and_deleted_with_it(conn: Any) -> None:
    pool = conn.storagePoolLookupByName("bcfleet")
    driver = LibvirtDriver.on(conn)
    driver.converge([guest("ins_a")], 0)
    volume = pool.storageVolLookupByName("ins_a.qcow2")
    assert volume.info()[1] == 10 * 1024**3  # the spec's diskGiB
    driver.converge([guest("ins_a", "stopped")], 1)
    driver.converge([guest("ins_a")], 2)
    assert pool.listVolumes() == ["ins_a.qcow2"], "kept across a stop and a start"
    driver.converge([], 3)
    driver.converge([], 4)
    assert pool.listVolumes() == []


def test_without_the_storage_pool_a_start_is_refused_with_libvirts_message(
    tmp_path: Path,
) -> None:
    start_event_loop()
    (tmp_path / "bare.xml").write_text("<node/>")
    bare = libvirt.open(f"test://{tmp_path / 'bare.xml'}")
    driver = LibvirtDriver.on(bare)
    assert driver.converge([guest("ins_a")], 0) == [("ins_a", "stopped")]
    assert "storage pool" in driver.problems()["ins_a"].lower()
    assert "bcfleet" in driver.problems()["ins_a"]
    driver.close()
    bare.close()


def test_the_host_options_reach_the_defined_domain(conn: Any, tmp_path: Path) -> None:
    host = HostDomain(
        domain_type="qemu",
        console_dir=str(tmp_path),
        kernel="/boot/vmlinuz",
        initrd="/boot/initrd.img",
        cmdline="console=ttyS0",
    )
    LibvirtDriver.on(conn, host=host).converge([guest("ins_a")], 0)
    xml = conn.lookupByName("ins_a").XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
    assert f'<log file="{tmp_path}/ins_a.log"' in xml.replace("'", '"')
    assert "<kernel>/boot/vmlinuz</kernel>" in xml and "<cmdline>console=ttyS0</cmdline>" in xml
    assert 'type="qemu"' in xml.replace("'", '"').split("\n")[0]


def test_with_a_ready_line_a_guest_is_ready_once_its_console_logs_it(
    conn: Any, tmp_path: Path
) -> None:
    host = HostDomain(console_dir=str(tmp_path))
    driver = LibvirtDriver.on(conn, host=host, ready_line="bcfleet-guest ready")
    assert driver.converge([guest("ins_a")], 0) == [("ins_a", "running")]
    (tmp_path / "ins_a.log").write_text("[    0.5] booting\n")
    assert driver.converge([guest("ins_a")], 1) == []
    (tmp_path / "ins_a.log").write_text("[    0.5] booting\nbcfleet-guest ready\n")
    assert driver.converge([guest("ins_a")], 2) == [("ins_a", "ready")]
    assert driver.converge([guest("ins_a")], 3) == []


def test_a_spec_the_renderer_cannot_map_is_that_guests_condition_alone(conn: Any) -> None:
    broken = guest("ins_bad")
    broken["gpus"] = [{"pciAddress": "not-a-pci-address"}]
    driver = LibvirtDriver.on(conn)
    driver.converge([broken, guest("ins_ok")], 0)
    assert "not a PCI address" in driver.problems()["ins_bad"]
    assert state(conn, "ins_ok") == libvirt.VIR_DOMAIN_RUNNING
