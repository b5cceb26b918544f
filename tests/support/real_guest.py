"""A host for real guests: libvirt's embedded QEMU driver, huge pages, the tiny guest image.

Used by the end-to-end tests (tests/agent/test_real_guest_*.py). real_host() gives one test at
a time (a file lock orders xdist workers) an embedded driver root cached in
.cache/libvirt-embed/ (``qemu:///embed?root=DIR``; the capabilities cache survives runs, the
first probe of QEMU takes about 50 s), 2 MiB huge pages and a hugetlbfs mounted for the test
(restored afterwards), and on leaving: no QEMU process of that root, no new machine cgroup.
Without libvirt-python, the QEMU driver or the guest image the test is skipped, or fails when
CI=true (scripts/libvirt-host and scripts/guest-image provide them).

The embedded driver lives in the process that opens the URI, and only one process may hold a
root at a time: a test that runs ``fleet agent run --hypervisor URI`` must close its own
connections first (closed_connection() does). The embedded driver needs a libvirt event loop
in that process (event_loop()).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import subprocess
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bcfleet.domain.instance_spec import instance_spec, render_libvirt_domain
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape
from tests.support.fleet import IN_CI
from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
EMBED_ROOT = REPO / ".cache" / "libvirt-embed"
LOCK_FILE = REPO / ".cache" / "libvirt-embed.lock"
HUGETLBFS = REPO / ".cache" / "hugetlbfs"  # mounted only while a real_host() runs
HUGEPAGE_KIB = 2048
HUGEPAGES_SYSFS = Path(f"/sys/kernel/mm/hugepages/hugepages-{HUGEPAGE_KIB}kB")
CGROUP_ROOT = Path("/sys/fs/cgroup")
QEMU_CONF = """\
# Written by tests/support/real_guest.py for the embedded driver.
user = "root"
group = "root"
dynamic_ownership = 0
stdio_handler = "file"
hugetlbfs_mount = "{hugetlbfs}"
"""


@dataclass(frozen=True)
class GuestImage:
    """scripts/guest-image's output: the kernel, the initramfs, the kernel's command line."""

    kernel: Path
    initrd: Path
    cmdline: str
    ready_line: str


@dataclass(frozen=True)
class RealHost:
    """An embedded QEMU driver root ready to run the guest image; domain_type is kvm or qemu."""

    uri: str
    root: Path
    domain_type: str
    image: GuestImage
    hugetlbfs: Path

    def console_log(self, name: str) -> Path:
        """Where a guest's serial console is logged (the path put in its domain XML)."""
        return self.root / "log" / "qemu" / f"{name}.console.log"


def unavailable(reason: str) -> None:
    """Skip the test, or fail it when CI=true: real guests are required there."""
    if IN_CI:
        pytest.fail(f"real guests are required when CI=true: {reason}", pytrace=False)
    pytest.skip(f"no real guest: {reason}")


def libvirt_module() -> ModuleType:
    """libvirt-python (the `libvirt` extra), or skip/fail."""
    try:
        import libvirt
    except ImportError:
        unavailable("libvirt-python is missing (run scripts/libvirt-host)")
        raise
    return libvirt


def guest_image() -> GuestImage:
    """Build (or find cached) the tiny guest with scripts/guest-image."""
    try:
        done = subprocess.run(
            [str(REPO / "scripts" / "guest-image")],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        unavailable(f"scripts/guest-image: {exc}")
        raise
    if done.returncode != 0:
        unavailable(f"scripts/guest-image failed: {done.stderr.strip()[-500:]}")
    paths = json.loads(done.stdout.strip().splitlines()[-1])
    return GuestImage(
        kernel=Path(paths["kernel"]),
        initrd=Path(paths["initrd"]),
        cmdline=paths["cmdline"],
        ready_line=paths["ready_line"],
    )


def embed_uri(root: Path) -> str:
    return f"qemu:///embed?root={root}"


_loop_lock = threading.Lock()
_loop_started = False


def event_loop(libvirt: ModuleType) -> None:
    """Register libvirt's default event loop and run it in a daemon thread, once per process."""
    global _loop_started
    with _loop_lock:
        if _loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        threading.Thread(target=run, name="libvirt-events", daemon=True).start()
        _loop_started = True


@contextlib.contextmanager
def closed_connection(libvirt: ModuleType, uri: str) -> Iterator[Any]:
    """A connection to uri, closed on leaving (which lets another process take an embed root)."""
    event_loop(libvirt)
    try:
        connection = libvirt.open(uri)
    except libvirt.libvirtError as exc:
        unavailable(f"libvirt cannot open {uri}: {exc}")
        raise
    try:
        yield connection
    finally:
        connection.close()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def huge_pages(count: int) -> Iterator[Path]:
    """count more free 2 MiB pages and a hugetlbfs mounted for them; both undone on leaving."""
    nr_file = HUGEPAGES_SYSFS / "nr_hugepages"
    if not nr_file.exists():
        unavailable(f"this kernel has no {HUGEPAGE_KIB} KiB huge pages")
    before = int(nr_file.read_text())
    # One path for every real_host() of a process: the embedded driver a process opened keeps
    # the qemu.conf it read first, hugetlbfs_mount included, until the process exits.
    mount = HUGETLBFS
    mount.mkdir(parents=True, exist_ok=True)
    mounted = False
    try:
        nr_file.write_text(f"{before + count}\n")
        free = int((HUGEPAGES_SYSFS / "free_hugepages").read_text())
        if free < count:
            unavailable(f"only {free} of {count} huge pages could be reserved")
        subprocess.run(
            ["mount", "-t", "hugetlbfs", "-o", f"pagesize={HUGEPAGE_KIB}K", "none", str(mount)],
            check=True,
            capture_output=True,
            timeout=30,
        )
        mounted = True
        yield mount
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=False, capture_output=True, timeout=30)
        nr_file.write_text(f"{before}\n")


def machine_cgroups() -> set[Path]:
    """The machine cgroups (libvirt's partition for guests) in every hierarchy."""
    found: set[Path] = set()
    for top in CGROUP_ROOT.glob("*/machine*"):
        if top.is_dir():
            found.add(top)
            found.update(path for path in top.rglob("*") if path.is_dir())
    return found


@contextlib.contextmanager
def machine_cgroups_removed() -> Iterator[None]:
    """Remove, on leaving, the machine cgroups that appeared meanwhile (deepest first)."""
    before = machine_cgroups()
    try:
        yield
    finally:
        for path in sorted(machine_cgroups() - before, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                path.rmdir()


def qemu_processes(root: Path) -> list[int]:
    """The QEMU processes started for an embed root (their command line names the root)."""
    marker = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"qemu-system" in cmdline.split(b"\0", 1)[0] and marker in cmdline:
            found.append(int(entry.name))
    return found


def kill_qemu(root: Path) -> list[int]:
    """SIGKILL what is left of root's QEMU processes; the pids that were left."""
    left = qemu_processes(root)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not qemu_processes(root), timeout=10, what="QEMU to die")
    return left


def prepare_root(root: Path, hugetlbfs: Path) -> None:
    """qemu.conf for an embed root: guests run as root (/dev/kvm is root-only), no virtlogd."""
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "log" / "qemu").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "qemu.conf").write_text(QEMU_CONF.format(hugetlbfs=hugetlbfs))


def machine_key() -> str:
    """What decides whether KVM can boot the guest: the kernel and its KVM modules."""
    modules = sorted(path.name for path in Path("/sys/module").glob("kvm*"))
    return f"{os.uname().release} {','.join(modules)}"


def kvm_boots(libvirt: ModuleType, connection: Any, host: RealHost) -> bool:
    """Whether the guest image prints its ready line under KVM (a trial boot of at most 20 s)."""
    spec = instance_spec(
        instance_id="bcfleet-kvm-trial",
        name="kvm-trial",
        state="running",
        shape=Shape(vcpu=1, memory_gib=1, disk_gib=0),
        placement=HostPlacement(cpus=None, cpuset=tuple(sorted(os.sched_getaffinity(0)))),
    )
    log = host.console_log("bcfleet-kvm-trial")
    domain = connection.defineXML(adapt_domain(render_libvirt_domain(spec), host, log))
    try:
        domain.create()
        wait_until(
            lambda: host.image.ready_line in console_text(log) or not domain.isActive(),
            timeout=20,
            what="the KVM trial boot",
        )
        return host.image.ready_line in console_text(log)
    except (libvirt.libvirtError, AssertionError):
        return False
    finally:
        if domain.isActive():
            domain.destroy()
        domain.undefine()


def domain_type(libvirt: ModuleType, connection: Any, host: RealHost) -> str:
    """kvm where it boots the stock kernel, else qemu (TCG); BCFLEET_REAL_GUEST_ACCEL forces one.

    Some machines offer a /dev/kvm that cannot (a paravirtual one fails on the first MSR), so
    the answer comes from a trial boot, remembered in the root per kernel and KVM modules."""
    forced = os.environ.get("BCFLEET_REAL_GUEST_ACCEL")
    if forced in ("kvm", "qemu"):
        return forced
    if "<domain type='kvm'" not in connection.getCapabilities():
        return "qemu"
    verdicts_file = host.root / "accelerator.json"
    verdicts = json.loads(verdicts_file.read_text()) if verdicts_file.exists() else {}
    key = machine_key()
    if key not in verdicts:
        trial = dataclasses.replace(host, domain_type="kvm")
        verdicts[key] = "kvm" if kvm_boots(libvirt, connection, trial) else "qemu"
        verdicts_file.write_text(json.dumps(verdicts, indent=1) + "\n")
    return str(verdicts[key])


@contextlib.contextmanager
def real_host(hugepages: int = 512) -> Iterator[RealHost]:
    """An embedded QEMU driver root with hugepages 2 MiB pages free (see the module docstring)."""
    libvirt = libvirt_module()
    image = guest_image()
    with (
        file_lock(LOCK_FILE),
        machine_cgroups_removed(),
        huge_pages(hugepages) as hugetlbfs,
    ):
        prepare_root(EMBED_ROOT, hugetlbfs)
        uri = embed_uri(EMBED_ROOT)
        host = RealHost(uri, EMBED_ROOT, "qemu", image, hugetlbfs)
        try:
            # The first connection probes QEMU into the root's capabilities cache (in .cache/).
            with closed_connection(libvirt, uri) as connection:
                host = dataclasses.replace(host, domain_type=domain_type(libvirt, connection, host))
            yield host
        finally:
            left = kill_qemu(EMBED_ROOT)
        assert not left, f"QEMU processes were left running: {left}"


def adapt_domain(xml: str, host: RealHost, console_log: Path) -> str:
    """bcfleet's rendered domain XML, made bootable from the guest image on this host.

    What render_libvirt_domain() does not say: the domain type (TCG is 'qemu'), direct kernel
    boot, a serial console with a log file, a CPU model TCG can run (host-passthrough is KVM's);
    and its disk is a volume of a storage pool that this host has not, so it is dropped."""
    domain = ET.fromstring(xml)
    domain.set("type", host.domain_type)
    os_element = domain.find("os")
    assert os_element is not None
    for boot in os_element.findall("boot"):
        os_element.remove(boot)
    ET.SubElement(os_element, "kernel").text = str(host.image.kernel)
    ET.SubElement(os_element, "initrd").text = str(host.image.initrd)
    ET.SubElement(os_element, "cmdline").text = host.image.cmdline
    cpu = domain.find("cpu")
    if cpu is not None and host.domain_type == "qemu":
        cpu.set("mode", "maximum")
    devices = domain.find("devices")
    assert devices is not None
    for disk in devices.findall("disk"):
        devices.remove(disk)
    serial = ET.SubElement(devices, "serial", type="pty")
    ET.SubElement(serial, "log", file=str(console_log), append="off")
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(ET.SubElement(devices, "console", type="pty"), "target", type="serial")
    ET.indent(domain)
    return ET.tostring(domain, encoding="unicode")


def console_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
