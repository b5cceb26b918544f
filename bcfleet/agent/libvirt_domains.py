"""Read and act on the libvirt domains bcfleet owns: the adapter under bcfleet.domain.converge.

A domain is ours only when its persistent XML carries bcfleet's metadata element (namespace
METADATA_NAMESPACE of bcfleet.domain.instance_spec); owned() skips every other domain
without reading anything else of it. apply() makes one Action's libvirt call; a start first
makes the guest's disk volume in the host's storage pool when it is missing, and the undefine
of a deleted guest deletes that volume. The libvirt driver (bcfleet.agent.libvirt_driver) is
the only caller.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import libvirt

from bcfleet.domain.converge import Act, Action, Observed, Power
from bcfleet.domain.instance_spec import (
    METADATA_NAMESPACE,
    HostDomain,
    render_libvirt_domain,
    volume_name,
)

# libvirt's virDomainShutoffReason, in words for a condition.
_SHUTOFF_REASONS = {
    libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN: "shutdown",
    libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED: "destroyed",
    libvirt.VIR_DOMAIN_SHUTOFF_CRASHED: "crashed",
    libvirt.VIR_DOMAIN_SHUTOFF_FAILED: "failed",
    libvirt.VIR_DOMAIN_SHUTOFF_DAEMON: "daemon",
}
_RUNNING_NOW = libvirt.VIR_DOMAIN_AFFECT_LIVE  # what the running guest has, not its definition
_NOW = libvirt.VIR_DOMAIN_AFFECT_CURRENT  # a running guest's live state, as every driver takes it


@dataclass(frozen=True)
class Owned:
    """One of our domains: the libvirt handle and what its bcfleet metadata says."""

    domain: libvirt.virDomain
    instance_id: str
    digest: str


def ownership(domain: libvirt.virDomain) -> Owned | None:
    """The domain's bcfleet metadata (persistent definition), or None: not ours."""
    try:
        text = domain.metadata(
            libvirt.VIR_DOMAIN_METADATA_ELEMENT,
            METADATA_NAMESPACE,
            libvirt.VIR_DOMAIN_AFFECT_CONFIG,
        )
    except libvirt.libvirtError as exc:
        if exc.get_error_code() in (libvirt.VIR_ERR_NO_DOMAIN_METADATA, libvirt.VIR_ERR_NO_DOMAIN):
            return None
        raise
    element = ET.fromstring(text)
    instance_id = element.get("id")
    if not instance_id:
        return None
    return Owned(domain, instance_id, element.get("spec", ""))


def owned(conn: libvirt.virConnect) -> dict[str, Owned]:
    """Every domain on the connection that bcfleet defined, by instance id."""
    found: dict[str, Owned] = {}
    for domain in conn.listAllDomains(0):
        mine = ownership(domain)
        if mine is not None:
            found[mine.instance_id] = mine
    return found


def observe(mine: Owned) -> Observed:
    """The domain's power state, and while it runs its vCPUs' CPU set and balloon target."""
    state, reason = mine.domain.state()
    if state == libvirt.VIR_DOMAIN_SHUTOFF:
        word = _SHUTOFF_REASONS.get(reason, "")
        power = Power.CRASHED if word == "crashed" else Power.STOPPED
        return Observed(power, mine.digest, reason=word)
    if state == libvirt.VIR_DOMAIN_CRASHED:
        return Observed(Power.CRASHED, mine.digest, reason="crashed")
    try:
        pins = mine.domain.vcpuPinInfo(_RUNNING_NOW)
        memory_kib = int(mine.domain.info()[2])
    except libvirt.libvirtError:
        if mine.domain.isActive():
            raise
        return observe(mine)  # it stopped between the two calls (an ACPI shutdown finishing)
    cpuset = tuple(sorted({cpu for row in pins for cpu, on in enumerate(row) if on}))
    return Observed(Power.RUNNING, mine.digest, cpuset=cpuset, memory_kib=memory_kib)


def domain_xml(spec: Mapping[str, Any], mine: Owned | None, host: HostDomain) -> str:
    """The rendered domain XML; a redefinition keeps the domain's UUID (libvirt's identity)."""
    xml = render_libvirt_domain(spec, host)
    if mine is None:
        return xml
    return xml.replace("<name>", f"<uuid>{mine.domain.UUIDString()}</uuid>\n  <name>", 1)


def apply(
    conn: libvirt.virConnect,
    action: Action,
    spec: Mapping[str, Any] | None,
    mine: Owned | None,
    host: HostDomain,
) -> Owned | None:
    """Make one action's libvirt call; returns the domain (a define makes or replaces it)."""
    if action.act == Act.DEFINE:
        assert spec is not None
        domain = conn.defineXML(domain_xml(spec, mine, host))
        made = ownership(domain)
        if made is None:
            raise libvirt.libvirtError("the defined domain lost bcfleet's metadata")
        return made
    assert mine is not None
    domain = mine.domain
    if action.act == Act.START:
        assert spec is not None
        _ensure_volume(conn, host, mine.instance_id, int(spec["shape"]["diskGiB"]))
        domain.create()
    elif action.act == Act.SHUTDOWN:
        _shutdown(domain)
    elif action.act == Act.DESTROY:
        domain.destroy()
    elif action.act == Act.UNDEFINE:
        domain.undefine()
        _delete_volume(conn, host, mine.instance_id)
        return None
    elif action.act == Act.SET_MEMORY:
        domain.setMemoryFlags(action.memory_kib, _NOW)
    elif action.act == Act.PIN_CPUS:
        _pin(conn, domain, action.cpuset)
    return mine


def _ensure_volume(conn: libvirt.virConnect, host: HostDomain, instance_id: str, gib: int) -> None:
    """The guest's disk in the host's storage pool, made empty (qcow2, its diskGiB) when missing."""
    if host.storage_pool is None:
        return
    pool = conn.storagePoolLookupByName(host.storage_pool)
    name = volume_name(instance_id)
    if name in pool.listVolumes():
        return
    volume = ET.Element("volume")
    ET.SubElement(volume, "name").text = name
    ET.SubElement(volume, "capacity", unit="GiB").text = str(max(gib, 1))
    ET.SubElement(ET.SubElement(volume, "target"), "format", type="qcow2")
    pool.createXML(ET.tostring(volume, encoding="unicode"), 0)


def _delete_volume(conn: libvirt.virConnect, host: HostDomain, instance_id: str) -> None:
    """A deleted guest's disk, when the pool has it."""
    if host.storage_pool is None:
        return
    try:
        pool = conn.storagePoolLookupByName(host.storage_pool)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_POOL:
            return
        raise
    if volume_name(instance_id) in pool.listVolumes():
        pool.storageVolLookupByName(volume_name(instance_id)).delete(0)


def _shutdown(domain: libvirt.virDomain) -> None:
    """ACPI power button; a driver without that flag (test:///) gets its default shutdown."""
    try:
        domain.shutdownFlags(libvirt.VIR_DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
            raise
        domain.shutdown()


def _pin(conn: libvirt.virConnect, domain: libvirt.virDomain, cpuset: tuple[int, ...]) -> None:
    """Every vCPU and the emulator threads onto the CPU set (the running guest: live)."""
    width = max(int(conn.getInfo()[2]), max(cpuset) + 1)
    cpumap = tuple(cpu in cpuset for cpu in range(width))
    for vcpu in range(int(domain.info()[3])):
        domain.pinVcpuFlags(vcpu, cpumap, _NOW)
    domain.pinEmulator(cpumap, _NOW)
