"""Seeded, realistic host inventories for demos and tests; the simulated agent and demos call it.

Every generator is pure: the same shape and seed give the same document, and
every document is valid against ``schemas/inventory.schema.json``. The seed
picks what varies between real hosts of one model: the host name, how much
memory firmware and kernel keep (``MemTotal`` is a few GiB under what is
installed, as on real hosts) and the PCI buses the GPUs sit on. CPUs are
numbered as Linux numbers a two-socket SMT machine: node 0 holds the first
core of each pair and its sibling half the range up (0-15 and 32-47).
"""

from __future__ import annotations

import random
from typing import Any

from bcfleet.errors import InvalidInputError

GIB = 1024**3
HUGEPAGE_1G = 1024**3
HUGEPAGE_2M = 2 * 1024**2
DISK_2TB = 2_000_398_934_016
DISK_960GB = 960_197_124_096
AGENT_VERSION = "simulated"
MAX_GPUS = 8

SHAPES = ("two-socket", "two-socket-4gpu", "two-socket-8gpu", "no-numa", "gpu-numa-unknown")


def _gib(amount_bytes: int) -> float:
    return round(amount_bytes / GIB, 3)


def _hostname(rng: random.Random) -> str:
    return f"sim-{rng.getrandbits(24):06x}"


def _agent(rng: random.Random, hostname: str | None) -> dict[str, str]:
    return {"version": AGENT_VERSION, "hostname": hostname or _hostname(rng)}


def _mem_total_gib(rng: random.Random, installed_gib: int, reserved: tuple[float, float]) -> float:
    """What ``MemTotal`` says for ``installed_gib``: less what firmware and kernel keep."""
    return round(installed_gib - rng.uniform(*reserved), 3)


def _check_gpus(gpus: int) -> None:
    if not 0 <= gpus <= MAX_GPUS:
        raise InvalidInputError(
            f"a simulated host has 0 to {MAX_GPUS} GPUs, not {gpus}", {"gpus": gpus}
        )


def _gpus(
    rng: random.Random, count: int, model: str, buses_by_node: list[list[int]]
) -> list[dict[str, Any]]:
    """``count`` GPUs dealt round-robin over the nodes, each on a distinct seeded bus."""
    nodes = len(buses_by_node)
    per_node = [(count + nodes - 1 - n) // nodes for n in range(nodes)]
    gpus: list[dict[str, Any]] = []
    for node, (buses, wanted) in enumerate(zip(buses_by_node, per_node, strict=True)):
        for bus in sorted(rng.sample(buses, wanted)):
            gpus.append({"model": model, "pciAddress": f"0000:{bus:02x}:00.0", "numaNode": node})
    return sorted(gpus, key=lambda gpu: gpu["pciAddress"])


def _two_socket_cpus(cores_per_node: int, nodes: int, isolated_cores: int) -> list[dict[str, Any]]:
    """SMT CPUs: core c of node n is CPU ``n*cores+c`` with its sibling ``total_cores`` above."""
    total_cores = cores_per_node * nodes
    cpus = []
    for thread in range(2):
        for node in range(nodes):
            for core in range(cores_per_node):
                cpus.append(
                    {
                        "id": thread * total_cores + node * cores_per_node + core,
                        "numaNode": node,
                        "isolated": core >= cores_per_node - isolated_cores,
                    }
                )
    return sorted(cpus, key=lambda cpu: cpu["id"])


def two_socket_host(
    seed: int = 0,
    *,
    gpus: int = 0,
    gpu_model: str = "L40S",
    gpu_numa_known: bool = True,
    hostname: str | None = None,
) -> dict[str, Any]:
    """64 CPUs on 2 NUMA nodes (one isolated SMT core, 2 CPUs, per node), 256 GiB
    with 64 free 1 GiB pages per node, a 2 TB disk and ``gpus`` GPUs spread over the nodes."""
    _check_gpus(gpus)
    rng = random.Random(seed)
    agent = _agent(rng, hostname)
    node_mem = [_mem_total_gib(rng, 128, (1.8, 2.6)), _mem_total_gib(rng, 128, (0.3, 0.7))]
    numa_nodes = [
        {
            "id": node,
            "memoryGiB": memory,
            "hugepages": [
                {"sizeBytes": HUGEPAGE_2M, "total": 0, "free": 0},
                {"sizeBytes": HUGEPAGE_1G, "total": 64, "free": 64},
            ],
        }
        for node, memory in enumerate(node_mem)
    ]
    buses = [list(range(0x10, 0x80, 0x08)), list(range(0x90, 0xF8, 0x08))]
    gpu_list = _gpus(rng, gpus, gpu_model, buses)
    if not gpu_numa_known:
        gpu_list = [{**gpu, "numaNode": None} for gpu in gpu_list]
    return {
        "cpus": _two_socket_cpus(cores_per_node=16, nodes=2, isolated_cores=1),
        "numaNodes": numa_nodes,
        "memoryGiB": round(sum(node_mem), 3),
        "diskGiB": _gib(DISK_2TB),
        "gpus": gpu_list,
        "agent": agent,
    }


def gpu_numa_unknown_host(
    seed: int = 0, *, gpus: int = 4, gpu_model: str = "L40S", hostname: str | None = None
) -> dict[str, Any]:
    """The two-socket host whose firmware does not say which node each GPU hangs off."""
    return two_socket_host(
        seed, gpus=gpus, gpu_model=gpu_model, gpu_numa_known=False, hostname=hostname
    )


def no_numa_host(
    seed: int = 0,
    *,
    cpus: int = 16,
    memory_gib: int = 64,
    gpus: int = 0,
    gpu_model: str = "L40S",
    hostname: str | None = None,
) -> dict[str, Any]:
    """A host whose kernel shows no NUMA topology (many VMs): nodes empty, every node null."""
    _check_gpus(gpus)
    if cpus < 1 or memory_gib < 2:
        raise InvalidInputError(
            "a simulated host needs at least 1 CPU and 2 GiB",
            {"cpus": cpus, "memoryGiB": memory_gib},
        )
    rng = random.Random(seed)
    agent = _agent(rng, hostname)
    memory = _mem_total_gib(rng, memory_gib, (0.6, 1.4))
    gpu_list = [
        {**gpu, "numaNode": None} for gpu in _gpus(rng, gpus, gpu_model, [list(range(1, 0x20))])
    ]
    return {
        "cpus": [{"id": cpu, "numaNode": None, "isolated": False} for cpu in range(cpus)],
        "numaNodes": [],
        "memoryGiB": memory,
        "diskGiB": _gib(DISK_960GB),
        "gpus": gpu_list,
        "agent": agent,
    }


def simulated_inventory(
    shape: str, seed: int = 0, *, hostname: str | None = None
) -> dict[str, Any]:
    """The inventory of one of SHAPES, e.g. ``simulated_inventory("two-socket-8gpu", seed=3)``."""
    if shape == "two-socket":
        return two_socket_host(seed, hostname=hostname)
    if shape == "two-socket-4gpu":
        return two_socket_host(seed, gpus=4, hostname=hostname)
    if shape == "two-socket-8gpu":
        return two_socket_host(seed, gpus=8, hostname=hostname)
    if shape == "no-numa":
        return no_numa_host(seed, hostname=hostname)
    if shape == "gpu-numa-unknown":
        return gpu_numa_unknown_host(seed, hostname=hostname)
    raise InvalidInputError(f"unknown simulated host shape {shape!r}", {"shapes": list(SHAPES)})


def simulated_fleet(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` inventories with distinct host names: mostly GPU hosts, a few degraded ones."""
    rng = random.Random(seed)
    weights = (2, 4, 2, 1, 1)
    shapes = rng.choices(SHAPES, weights=weights, k=count)
    return [
        simulated_inventory(shape, rng.getrandbits(32), hostname=f"sim-{index + 1:03d}")
        for index, shape in enumerate(shapes)
    ]
