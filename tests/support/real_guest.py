"""A host for real guests: libvirt's embedded QEMU driver, huge pages, the tiny guest image.

Used by the end-to-end tests (tests/agent/test_real_guest_*.py). real_host() gives one test at
a time (a file lock orders xdist workers) an embedded driver root of the calling process,
.cache/libvirt-embed-PID/ (``qemu:///embed?root=DIR``), seeded from the shared store
.cache/libvirt-embed/ (the capabilities cache and accelerator.json survive runs: the first probe
of QEMU takes about 50 s, and what a root learns is copied back), 2 MiB huge pages and a
hugetlbfs mounted for the test (restored afterwards), and on leaving: no QEMU process of that
root, no new machine cgroup. The next real_host() removes the roots of exited processes.
Without libvirt-python, the QEMU driver or the guest image the test is skipped, or fails when
CI=true (scripts/libvirt-host and scripts/guest-image provide them).

The embedded driver lives in the process that opens the URI and stays there, holding the root's
pid file, until that process exits (closing every connection does not let it go; libvirt 9.0),
so only one process may ever open a root: hence a root per process, which the process can open
again for each test. A test that runs ``fleet agent run --hypervisor URI`` gives the agent a
root of its own (tests/support/guest_fleet.py agent_root()). The embedded driver needs a libvirt
event loop in that process (event_loop()).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
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
EMBED_STORE = REPO / ".cache" / "libvirt-embed"  # never opened: what the roots share
EMBED_ROOT_PREFIX = "libvirt-embed-"  # + the pid of the process whose root it is
SEEDED = ("cache", "accelerator.json")  # what a root takes from and gives back to the store
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
    """A connection to uri, closed on leaving (the embedded driver stays in the process)."""
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


def process_root() -> Path:
    """The embed root of this process (see the module docstring)."""
    return EMBED_STORE.parent / f"{EMBED_ROOT_PREFIX}{os.getpid()}"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_roots() -> None:
    """Remove the roots of processes that have exited (their QEMU processes killed first)."""
    for root in EMBED_STORE.parent.glob(f"{EMBED_ROOT_PREFIX}*"):
        pid = root.name.removeprefix(EMBED_ROOT_PREFIX)
        if root.is_dir() and pid.isdigit() and not alive(int(pid)):
            kill_qemu(root)
            shutil.rmtree(root, ignore_errors=True)


def copy_new(source: Path, target: Path) -> None:
    """Copy what of source (a file or a tree) target has not yet; newer accelerator verdicts
    replace older ones."""
    if source.is_dir():
        for path in source.rglob("*"):
            if path.is_file():
                copy_new(path, target / path.relative_to(source))
    elif source.is_file() and (not target.exists() or source.name == "accelerator.json"):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def seed_root(root: Path) -> None:
    """A root new to this process takes the store's capabilities cache and verdicts."""
    if root.exists():
        return
    for name in SEEDED:
        copy_new(EMBED_STORE / name, root / name)


def give_back(root: Path) -> None:
    """What the root learnt (new capabilities, the KVM verdict) goes to the store."""
    for name in SEEDED:
        if name == "accelerator.json" and (EMBED_STORE / name).exists():
            merged = json.loads((EMBED_STORE / name).read_text())
            if (root / name).exists():
                merged.update(json.loads((root / name).read_text()))
            (EMBED_STORE / name).write_text(json.dumps(merged, indent=1) + "\n")
        else:
            copy_new(root / name, EMBED_STORE / name)


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
        remove_dead_roots()
        root = process_root()
        seed_root(root)
        prepare_root(root, hugetlbfs)
        uri = embed_uri(root)
        host = RealHost(uri, root, "qemu", image, hugetlbfs)
        try:
            # The first connection of a root probes QEMU unless the seeded cache answers.
            with closed_connection(libvirt, uri) as connection:
                host = dataclasses.replace(host, domain_type=domain_type(libvirt, connection, host))
            give_back(root)
            yield host
        finally:
            left = kill_qemu(root)
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
