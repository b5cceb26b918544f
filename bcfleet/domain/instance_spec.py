"""The InstanceSpec a host agent receives, and the libvirt domain XML it maps to.

The instances API builds the spec with instance_spec() from an instance's shape and stored
host placement; the agent (and ``fleet instances spec ID --format libvirt``) renders it with
render_libvirt_domain(). The spec is a JSON document in the documents' camelCase:

    {"id", "name", "state", "shape": {vcpu, memoryGiB, diskGiB, gpus},
     "placement": {"cpus", "cpuset", "mems", "hugepageSizeBytes"},
     "balloon": {"enabled", "floorPercent"}, "gpus": [{"pciAddress"}]}

placement.cpus is the pinned CPU of each vCPU, or null for a floating guest; placement.cpuset
is where the vCPUs may run (never the host's reserved CPUs); mems the host NUMA nodes the
memory comes from, or null. An agent that does not know a field drops it harmlessly.

In the XML, huge pages need a guest NUMA topology for ``<page nodeset>`` (which names guest
nodes): a huge-page guest gets one guest cell holding all its vCPUs and memory, and that cell
is bound to the host nodes in ``<numatune>``.
"""

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, TypedDict

from bcfleet.domain.json_types import OneOf
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape, ShapeJson
from bcfleet.domain.states import InstanceState

METADATA_NAMESPACE = "https://bcfleet.dev/xmlns/libvirt/instance/1"
DEFAULT_BALLOON_FLOOR_PERCENT = 50
_PCI_ADDRESS = re.compile(
    r"^(?P<domain>[0-9a-fA-F]{4}):(?P<bus>[0-9a-fA-F]{2}):(?P<slot>[0-9a-fA-F]{2})\.(?P<function>[0-7])$"
)


class SpecPlacementJson(TypedDict):
    """Where the guest runs: the pinned CPU of each vCPU (null: floating), the CPUs its vCPUs may
    use, the host NUMA nodes its memory comes from (null: any), its huge page size (null: none)."""

    cpus: list[int] | None
    cpuset: list[int]
    mems: list[int] | None
    hugepageSizeBytes: int | None


class BalloonJson(TypedDict):
    """Whether the guest's memory balloon is on, and the share of its memory it never gives back."""

    enabled: bool
    floorPercent: int


class SpecGpuJson(TypedDict):
    """A GPU passed through to the guest, by its PCI address."""

    pciAddress: str


class InstanceSpecJson(TypedDict):
    """What a host agent applies (bcfleet.domain.instance_spec). In a host's specs, anyone but
    root's admin gets each guest without its name and under an opaque id (gst_…), which is also
    the id to report its state by."""

    id: str
    name: NotRequired[str]
    state: Annotated[str, OneOf(tuple(InstanceState))]
    shape: ShapeJson
    placement: SpecPlacementJson
    balloon: BalloonJson
    gpus: list[SpecGpuJson]


@dataclass(frozen=True)
class HostDomain:
    """How this host's libvirt runs every guest (the agent's options, the same for each spec):
    the domain type ("kvm", or "qemu" where only TCG runs), the storage pool of the disks, a
    folder for each guest's serial console log (<id>.log), and a kernel to boot directly."""

    domain_type: str = "kvm"
    storage_pool: str | None = "bcfleet"  # None: no disk (a URI without storage pools)
    console_dir: str | None = None
    kernel: str | None = None
    initrd: str | None = None
    cmdline: str | None = None

    def console_log(self, instance_id: str) -> str | None:
        return None if self.console_dir is None else f"{self.console_dir}/{instance_id}.log"


def instance_spec(
    *,
    instance_id: str,
    name: str,
    state: str,
    shape: Shape,
    placement: HostPlacement,
    gpu_pci_addresses: Sequence[str] = (),
    balloon_floor_percent: int = DEFAULT_BALLOON_FLOOR_PERCENT,
) -> InstanceSpecJson:
    """The InstanceSpec of one hosted instance, as its host's agent pulls it."""
    return {
        "id": instance_id,
        "name": name,
        "state": state,
        "shape": shape.to_json(),
        "placement": {
            "cpus": None if placement.cpus is None else list(placement.cpus),
            "cpuset": list(placement.cpuset),
            "mems": None if placement.mems is None else list(placement.mems),
            "hugepageSizeBytes": placement.hugepage_size_bytes,
        },
        "balloon": {"enabled": placement.balloon, "floorPercent": balloon_floor_percent},
        "gpus": [{"pciAddress": address} for address in gpu_pci_addresses],
    }


def format_cpuset(ids: Iterable[int]) -> str:
    """libvirt's list syntax: (0, 1, 2, 5, 7, 8) → "0-2,5,7-8"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(ids)):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in runs)


def parse_cpuset(text: str) -> tuple[int, ...]:
    """The inverse of format_cpuset: "0-2,5" → (0, 1, 2, 5)."""
    ids: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        ids.update(range(int(low), int(high or low) + 1))
    return tuple(sorted(ids))


def _kib(gib: int) -> str:
    return str(gib * 1024 * 1024)


def spec_digest(spec: Mapping[str, Any]) -> str:
    """What a defined domain was made from: the spec's fields that shape its XML (not its state
    or name), hashed; the driver defines a domain again when this changes."""
    shaping = {key: spec.get(key) for key in ("shape", "placement", "balloon", "gpus")}
    text = json.dumps(shaping, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _metadata(domain: ET.Element, spec: Mapping[str, Any]) -> None:
    metadata = ET.SubElement(domain, "metadata")
    ET.SubElement(
        metadata,
        "fleet:instance",
        {
            "xmlns:fleet": METADATA_NAMESPACE,
            "id": str(spec["id"]),
            "state": str(spec.get("state", "")),
            "balloonFloorPercent": str(spec.get("balloon", {}).get("floorPercent", "")),
            "spec": spec_digest(spec),
        },
    )


def _cpus(domain: ET.Element, vcpu: int, placement: Mapping[str, Any]) -> None:
    element = ET.SubElement(domain, "vcpu", placement="static")
    element.text = str(vcpu)
    if placement.get("cpuset"):
        element.set("cpuset", format_cpuset(placement["cpuset"]))
    pinned = placement.get("cpus")
    if pinned:
        cputune = ET.SubElement(domain, "cputune")
        for index, cpu in enumerate(pinned):
            ET.SubElement(cputune, "vcpupin", vcpu=str(index), cpuset=str(cpu))


def _memory(domain: ET.Element, shape: Mapping[str, Any], placement: Mapping[str, Any]) -> None:
    ET.SubElement(domain, "memory", unit="KiB").text = _kib(shape["memoryGiB"])
    ET.SubElement(domain, "currentMemory", unit="KiB").text = _kib(shape["memoryGiB"])
    size = placement.get("hugepageSizeBytes")
    if size:
        backing = ET.SubElement(ET.SubElement(domain, "memoryBacking"), "hugepages")
        ET.SubElement(backing, "page", size=str(size // 1024), unit="KiB", nodeset="0")


def _numatune(domain: ET.Element, placement: Mapping[str, Any]) -> None:
    if placement.get("mems"):
        numatune = ET.SubElement(domain, "numatune")
        nodeset = format_cpuset(placement["mems"])
        ET.SubElement(numatune, "memory", mode="strict", nodeset=nodeset)


def _os(domain: ET.Element, host: HostDomain) -> None:
    os_element = ET.SubElement(domain, "os")
    ET.SubElement(os_element, "type").text = "hvm"
    for tag in ("kernel", "initrd", "cmdline"):
        value = getattr(host, tag)
        if value:
            ET.SubElement(os_element, tag).text = value
    ET.SubElement(os_element, "boot", dev="hd")


def _guest_cpu(domain: ET.Element, shape: Mapping[str, Any], placement: Mapping[str, Any]) -> None:
    ET.SubElement(ET.SubElement(domain, "features"), "acpi")
    # the host's CPU under KVM; QEMU's most capable model where only TCG runs
    mode = "host-passthrough" if domain.get("type") == "kvm" else "maximum"
    cpu = ET.SubElement(domain, "cpu", mode=mode)
    if placement.get("hugepageSizeBytes"):
        cell = {
            "id": "0",
            "cpus": format_cpuset(range(shape["vcpu"])),
            "memory": _kib(shape["memoryGiB"]),
            "unit": "KiB",
        }
        ET.SubElement(ET.SubElement(cpu, "numa"), "cell", cell)


def _hostdev(devices: ET.Element, pci_address: str) -> None:
    match = _PCI_ADDRESS.match(pci_address)
    if match is None:
        raise ValueError(f"not a PCI address: {pci_address!r}")
    hostdev = ET.SubElement(devices, "hostdev", mode="subsystem", type="pci", managed="yes")
    address = {key: f"0x{value.lower()}" for key, value in match.groupdict().items()}
    ET.SubElement(ET.SubElement(hostdev, "source"), "address", address)


def volume_name(instance_id: str) -> str:
    """The disk volume of a guest in the host's storage pool."""
    return f"{instance_id}.qcow2"


def _console(devices: ET.Element, log: str) -> None:
    serial = ET.SubElement(devices, "serial", type="pty")
    ET.SubElement(serial, "log", file=log, append="off")
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(ET.SubElement(devices, "console", type="pty"), "target", type="serial", port="0")


def _devices(domain: ET.Element, spec: Mapping[str, Any], host: HostDomain) -> None:
    devices = ET.SubElement(domain, "devices")
    if host.storage_pool is not None:
        disk = ET.SubElement(devices, "disk", type="volume", device="disk")
        ET.SubElement(disk, "driver", name="qemu", type="qcow2")
        ET.SubElement(disk, "source", pool=host.storage_pool, volume=volume_name(str(spec["id"])))
        ET.SubElement(disk, "target", dev="vda", bus="virtio")
    log = host.console_log(str(spec["id"]))
    if log is not None:
        _console(devices, log)
    for gpu in spec.get("gpus") or ():
        _hostdev(devices, gpu["pciAddress"])
    if (spec.get("balloon") or {}).get("enabled"):
        balloon = ET.SubElement(devices, "memballoon", model="virtio")
        ET.SubElement(balloon, "stats", period="10")
    else:
        ET.SubElement(devices, "memballoon", model="none")


def render_libvirt_domain(spec: Mapping[str, Any], host: HostDomain | None = None) -> str:
    """The libvirt-kvm domain XML of an InstanceSpec; the disk is a volume named after the id."""
    host = host or HostDomain()
    shape = spec["shape"]
    placement = spec.get("placement") or {}
    domain = ET.Element("domain", type=host.domain_type)
    ET.SubElement(domain, "name").text = str(spec["id"])
    ET.SubElement(domain, "title").text = str(spec.get("name", spec["id"]))
    _metadata(domain, spec)
    _memory(domain, shape, placement)
    _cpus(domain, shape["vcpu"], placement)
    _numatune(domain, placement)
    _os(domain, host)
    _guest_cpu(domain, shape, placement)
    _devices(domain, spec, host)
    ET.indent(domain)
    return ET.tostring(domain, encoding="unicode") + "\n"
