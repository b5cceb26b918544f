"""Host placement: reserved and isolated CPUs, NUMA affinity, degraded reasons, huge pages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcfleet.domain.numa import (
    DegradedReason,
    HostPlacement,
    NoGuestCpus,
    NoHugepages,
    NotCandidate,
    choose_host_placement,
    degraded_condition,
    pages_needed,
    reserved_cpus,
    size_label,
)
from bcfleet.domain.shapes import Inventory, PlacementPolicy, Shape

R = DegradedReason
GIB_PAGE = 1 << 30
MIB2_PAGE = 2 << 20
PINNED = PlacementPolicy(pinned=True)
AFFINE = PlacementPolicy(numa_affine=True)
PINNED_AFFINE = PlacementPolicy(numa_affine=True, pinned=True)
HUGE = PlacementPolicy(hugepage_size_bytes=GIB_PAGE)
HUGE_AFFINE = PlacementPolicy(numa_affine=True, hugepage_size_bytes=GIB_PAGE)
HUGE_PINNED_AFFINE = PlacementPolicy(numa_affine=True, pinned=True, hugepage_size_bytes=GIB_PAGE)


def inventory(
    *,
    nodes: int = 2,
    cpus_per_node: int = 8,
    isolated: Sequence[int] = (),
    node_memory: float = 64,
    hugepages: dict[int, tuple[int, int]] | None = None,
    gpu_nodes: Sequence[int | None] = (),
) -> Inventory:
    """Nodes of consecutive CPUs (node 0 holds 0..7, node 1 holds 8..15 by default).

    hugepages maps a node to (page size, total); nodes=0 gives a host without topology.
    """
    count = max(nodes, 1) * cpus_per_node
    pages = hugepages or {}

    def node_doc(n: int) -> dict[str, Any]:
        pools = []
        if n in pages:
            size, total = pages[n]
            pools.append({"sizeBytes": size, "total": total, "free": total})
        return {"id": n, "memoryGiB": node_memory, "hugepages": pools}

    doc: dict[str, Any] = {
        "cpus": [
            {"id": i, "numaNode": i // cpus_per_node if nodes else None, "isolated": i in isolated}
            for i in range(count)
        ],
        "numaNodes": [node_doc(n) for n in range(nodes)],
        "memoryGiB": node_memory * max(nodes, 1),
        "diskGiB": 2000,
        "gpus": [
            {"model": "L40S", "pciAddress": f"0000:{17 + i:02x}:00.0", "numaNode": node}
            for i, node in enumerate(gpu_nodes)
        ],
    }
    return Inventory.from_json(doc)


def guest(vcpu: int = 4, memory_gib: int = 8, gpus: int = 0) -> Shape:
    return Shape(vcpu=vcpu, memory_gib=memory_gib, disk_gib=40, gpus=gpus)


def pinned_on(*cpus: int, node: int | None = None, memory_gib: int = 0) -> HostPlacement:
    """Another guest already pinned on the host."""
    return HostPlacement(
        cpus=cpus,
        cpuset=tuple(sorted(cpus)),
        mems=None if node is None else (node,),
        memory_by_node={} if node is None else {node: memory_gib},
    )


def pages_held(node: int, count: int) -> HostPlacement:
    """Another guest holding 1 GiB huge pages on a node."""
    return HostPlacement(
        cpus=None, cpuset=(2,), hugepage_size_bytes=GIB_PAGE, hugepages_by_node={node: count}
    )


@dataclass(frozen=True)
class Arrival:
    """A guest arriving on a host; a GPU guest gets the host's first GPU atoms."""

    inv: Inventory
    policy: PlacementPolicy | None = None
    shape: Shape = guest(4)
    others: tuple[HostPlacement, ...] = ()
    reserve: int = 2
    ratio: float | None = 1.0

    def place(self) -> HostPlacement:
        return choose_host_placement(
            self.inv,
            self.shape,
            self.policy,
            gpus=self.inv.gpus[: self.shape.gpus],
            others=self.others,
            reserve_vcpu=self.reserve,
            memory_ratio=self.ratio,
        )


# --- the host's own CPUs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inv", "reserve", "expected"),
    [
        pytest.param(inventory(), 2, {0, 1}, id="lowest-two-by-default"),
        pytest.param(inventory(isolated=[0]), 2, {1, 2}, id="isolated-cpus-are-never-reserved"),
        pytest.param(inventory(), 4, {0, 1, 2, 3}, id="host-reserve-vcpu-configurable"),
        pytest.param(inventory(), 0, set(), id="reserve-zero"),
        pytest.param(
            inventory(nodes=1, cpus_per_node=4, isolated=[1, 2, 3]),
            2,
            {0},
            id="fewer-non-isolated-than-reserve-reserves-them-all",
        ),
    ],
)
def test_reserved_cpus(inv: Inventory, reserve: int, expected: set[int]) -> None:
    assert reserved_cpus(inv, reserve) == expected


@pytest.mark.parametrize(
    ("arrival", "cpus"),
    [
        pytest.param(Arrival(inventory(), PINNED), (2, 3, 4, 5), id="pinned-skips-reserved-cpus"),
        pytest.param(
            Arrival(inventory(isolated=[6, 7, 12]), PINNED),
            (6, 7, 12, 2),
            id="pinned-takes-isolated-cpus-first",
        ),
        pytest.param(
            Arrival(inventory(isolated=[0, 1]), PINNED),
            (0, 1, 4, 5),
            id="isolated-cpu-0-is-a-guest-cpu-reserve-moves-up",
        ),
        pytest.param(
            Arrival(inventory(), PINNED, reserve=4), (4, 5, 6, 7), id="larger-host-reserve"
        ),
        pytest.param(
            Arrival(inventory(), PINNED, others=(pinned_on(2, 3, 4, 5),)),
            (6, 7, 8, 9),
            id="second-pinned-guest-sees-the-first",
        ),
    ],
)
def test_pinned_cpus(arrival: Arrival, cpus: tuple[int, ...]) -> None:
    placement = arrival.place()
    assert placement.cpus == cpus
    assert placement.cpuset == tuple(sorted(cpus))
    assert placement.degraded_reason is None
    assert not set(cpus) & reserved_cpus(arrival.inv, arrival.reserve)


@pytest.mark.parametrize(
    ("arrival", "cpuset"),
    [
        pytest.param(
            Arrival(inventory(nodes=1, cpus_per_node=6)),
            (2, 3, 4, 5),
            id="floating-guest-never-gets-reserved-cpus",
        ),
        pytest.param(
            Arrival(inventory(nodes=1), others=(pinned_on(2, 3),)),
            (4, 5, 6, 7),
            id="floating-guest-avoids-pinned-cpus",
        ),
        pytest.param(
            Arrival(inventory(nodes=1, isolated=[7])),
            (2, 3, 4, 5, 6, 7),
            id="floating-guest-may-use-isolated-cpus",
        ),
        pytest.param(
            Arrival(inventory(nodes=1), reserve=4), (4, 5, 6, 7), id="floating-larger-reserve"
        ),
    ],
)
def test_floating_cpuset(arrival: Arrival, cpuset: tuple[int, ...]) -> None:
    placement = arrival.place()
    assert placement.cpus is None
    assert placement.cpuset == cpuset
    assert placement.degraded_reason is None


@pytest.mark.parametrize(
    "arrival",
    [
        pytest.param(Arrival(inventory(nodes=1, cpus_per_node=2)), id="all-cpus-reserved"),
        pytest.param(
            Arrival(inventory(nodes=1, cpus_per_node=4), others=(pinned_on(2, 3),)),
            id="all-guest-cpus-pinned-by-others",
        ),
    ],
)
def test_no_guest_cpus_is_no_candidate(arrival: Arrival) -> None:
    with pytest.raises(NoGuestCpus) as raised:
        arrival.place()
    assert raised.value.no_fit().kind == "cpus"


# --- NUMA affinity -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrival", "node", "cpus"),
    [
        pytest.param(
            Arrival(inventory(), PINNED_AFFINE),
            0,
            (2, 3, 4, 5),
            id="pinned-affine-best-fit-node-keeps-cpus-and-memory-together",
        ),
        pytest.param(
            Arrival(inventory(), PINNED_AFFINE, others=(pinned_on(2, 3, 4, 5, node=0),)),
            1,
            (8, 9, 10, 11),
            id="pinned-affine-second-guest-moves-to-the-roomier-node",
        ),
        pytest.param(
            Arrival(inventory(), PINNED_AFFINE, guest(8)),
            1,
            tuple(range(8, 16)),
            id="pinned-affine-node-0-too-small-after-reserve",
        ),
        pytest.param(
            Arrival(inventory(gpu_nodes=[1]), PINNED_AFFINE, guest(4, gpus=1)),
            1,
            (8, 9, 10, 11),
            id="gpu-guest-lives-on-its-gpus-node",
        ),
        pytest.param(
            Arrival(inventory(), AFFINE), 0, None, id="affine-floating-guest-floats-on-one-node"
        ),
        pytest.param(
            Arrival(inventory(isolated=[14, 15]), PINNED_AFFINE, guest(2)),
            1,
            (14, 15),
            id="pinned-affine-prefers-the-node-with-isolated-cpus",
        ),
        pytest.param(
            Arrival(inventory(isolated=[14, 15]), AFFINE, guest(2)),
            0,
            None,
            id="floating-affine-ignores-isolated-cpus-best-fit",
        ),
    ],
)
def test_numa_affine_honoured(arrival: Arrival, node: int, cpus: tuple[int, ...] | None) -> None:
    placement = arrival.place()
    assert placement.degraded_reason is None
    assert placement.mems == (node,)
    assert placement.memory_by_node == {node: arrival.shape.memory_gib}
    assert placement.cpus == cpus
    assert {c.numa_node for c in arrival.inv.cpus if c.id in placement.cpuset} == {node}
    assert degraded_condition(placement) is None


@pytest.mark.parametrize(
    ("arrival", "reason"),
    [
        pytest.param(
            Arrival(inventory(nodes=0), PINNED_AFFINE),
            R.NO_NUMA_TOPOLOGY,
            id="no-numa-nodes-is-no-numa-topology",
        ),
        pytest.param(
            Arrival(inventory(nodes=0), AFFINE),
            R.NO_NUMA_TOPOLOGY,
            id="no-numa-topology-floating-affine",
        ),
        pytest.param(
            Arrival(inventory(gpu_nodes=[None]), PINNED_AFFINE, guest(4, gpus=1)),
            R.GPU_NUMA_UNKNOWN,
            id="gpu-numa-node-null",
        ),
        pytest.param(
            Arrival(inventory(gpu_nodes=[7]), AFFINE, guest(4, gpus=1)),
            R.GPU_NUMA_UNKNOWN,
            id="gpu-on-a-node-the-host-does-not-report",
        ),
        pytest.param(
            Arrival(inventory(gpu_nodes=[0, 1]), AFFINE, guest(4, gpus=2)),
            R.NO_NUMA_NODE_FITS,
            id="gpus-on-two-nodes",
        ),
        pytest.param(
            Arrival(inventory(node_memory=64), AFFINE, guest(4, memory_gib=96)),
            R.NUMA_MEMORY_TOO_SMALL,
            id="node-memory-smaller-than-guest",
        ),
        pytest.param(
            Arrival(inventory(gpu_nodes=[0]), PINNED_AFFINE, guest(4, memory_gib=96, gpus=1)),
            R.NUMA_MEMORY_TOO_SMALL,
            id="gpu-node-memory-smaller-than-guest",
        ),
        pytest.param(
            Arrival(inventory(nodes=1, cpus_per_node=16), PINNED, guest(16)),
            R.NOT_ENOUGH_FREE_CPUS,
            id="pinned-more-vcpus-than-cpus-outside-reserve",
        ),
        pytest.param(
            Arrival(inventory(), PINNED, guest(8), others=(pinned_on(*range(2, 10)),)),
            R.NOT_ENOUGH_FREE_CPUS,
            id="pinned-the-rest-is-pinned-by-others",
        ),
        pytest.param(
            Arrival(inventory(), PINNED_AFFINE, guest(8), others=(pinned_on(*range(2, 10)),)),
            R.NOT_ENOUGH_FREE_CPUS,
            id="pinned-affine-host-lacks-free-cpus",
        ),
        pytest.param(
            Arrival(inventory(), PINNED_AFFINE, guest(8), others=(pinned_on(8, 9),)),
            R.NO_NUMA_NODE_FITS,
            id="enough-free-cpus-but-on-no-single-node",
        ),
        pytest.param(
            Arrival(inventory(), AFFINE, guest(10)),
            R.NO_NUMA_NODE_FITS,
            id="floating-affine-more-vcpus-than-a-node",
        ),
        pytest.param(
            Arrival(
                inventory(),
                AFFINE,
                guest(2, memory_gib=40),
                others=(pinned_on(2, node=0, memory_gib=30), pinned_on(8, node=1, memory_gib=30)),
            ),
            R.NO_NUMA_NODE_FITS,
            id="node-memory-held-by-numa-bound-guests",
        ),
        pytest.param(
            Arrival(
                inventory(hugepages={0: (GIB_PAGE, 48), 1: (GIB_PAGE, 48)}),
                AFFINE,
                guest(2, memory_gib=24),
            ),
            R.NO_NUMA_NODE_FITS,
            id="node-memory-held-by-huge-page-pools",
        ),
    ],
)
def test_degraded_reasons(arrival: Arrival, reason: DegradedReason) -> None:
    placement = arrival.place()
    assert placement.degraded_reason == reason
    assert placement.cpus is None, "a degraded guest runs floating"
    assert placement.mems is None
    assert placement.memory_by_node == {}
    assert not set(placement.cpuset) & reserved_cpus(arrival.inv, 2)
    taken = {cpu for other in arrival.others for cpu in other.cpus or ()}
    assert not set(placement.cpuset) & taken
    condition = degraded_condition(placement)
    assert condition is not None
    assert condition["type"] == "PlacementDegraded"
    assert condition["reason"] == str(reason)


def test_memory_overcommit_stretches_node_memory_for_affine_guests() -> None:
    others = (pinned_on(2, node=0, memory_gib=60), pinned_on(8, node=1, memory_gib=60))
    strict = Arrival(inventory(), AFFINE, guest(2, 16), others, ratio=1).place()
    stretched = Arrival(inventory(), AFFINE, guest(2, 16), others, ratio=1.5).place()
    assert strict.degraded_reason == R.NO_NUMA_NODE_FITS
    assert stretched.degraded_reason is None


def test_a_policy_asking_nothing_is_never_degraded() -> None:
    placement = Arrival(inventory(nodes=0), PlacementPolicy()).place()
    assert placement.degraded_reason is None
    assert placement.cpus is None


def test_resize_chooses_again_without_its_own_placement() -> None:
    inv = inventory()
    before = choose_host_placement(inv, guest(4), PINNED_AFFINE)
    neighbour = choose_host_placement(inv, guest(2), PINNED_AFFINE, others=[before])
    after = choose_host_placement(inv, guest(6), PINNED_AFFINE, others=[neighbour])
    assert before.cpus == (2, 3, 4, 5)
    assert neighbour.cpus == (6, 7)
    assert after.cpus == (8, 9, 10, 11, 12, 13)
    assert after.mems == (1,)


# --- huge pages ----------------------------------------------------------------------------

TWO_NODES_16_PAGES = {0: (GIB_PAGE, 16), 1: (GIB_PAGE, 16)}


@pytest.mark.parametrize(
    ("arrival", "pages", "degraded"),
    [
        pytest.param(
            Arrival(inventory(hugepages=TWO_NODES_16_PAGES), HUGE_PINNED_AFFINE),
            {0: 8},
            None,
            id="affine-guest-books-pages-on-its-node",
        ),
        pytest.param(
            Arrival(
                inventory(hugepages={0: (MIB2_PAGE, 4096)}),
                PlacementPolicy(hugepage_size_bytes=MIB2_PAGE),
                guest(2, 4),
            ),
            {0: 2048},
            None,
            id="2mib-pages-count-per-page",
        ),
        pytest.param(
            Arrival(inventory(hugepages={0: (GIB_PAGE, 8), 1: (GIB_PAGE, 12)}), HUGE),
            {0: 8},
            None,
            id="floating-guest-books-the-best-fitting-single-node",
        ),
        pytest.param(
            Arrival(inventory(hugepages={0: (GIB_PAGE, 6), 1: (GIB_PAGE, 10)}), HUGE, guest(2, 12)),
            {1: 10, 0: 2},
            None,
            id="floating-guest-spreads-pages-when-no-node-has-enough",
        ),
        pytest.param(
            Arrival(
                inventory(hugepages={0: (GIB_PAGE, 16)}, gpu_nodes=[1]),
                HUGE_PINNED_AFFINE,
                guest(4, 8, gpus=1),
            ),
            {0: 8},
            R.NO_NUMA_NODE_FITS,
            id="affinity-degrades-but-pages-are-still-booked",
        ),
        pytest.param(
            Arrival(
                inventory(hugepages=TWO_NODES_16_PAGES), HUGE_AFFINE, others=(pages_held(0, 12),)
            ),
            {1: 8},
            None,
            id="pages-booked-by-others-are-not-bookable",
        ),
    ],
)
def test_hugepages_booked_per_node(
    arrival: Arrival, pages: dict[int, int], degraded: DegradedReason | None
) -> None:
    placement = arrival.place()
    size = placement.hugepage_size_bytes
    assert arrival.policy is not None
    assert size == arrival.policy.hugepage_size_bytes
    assert placement.hugepages_by_node == pages
    assert sum(pages.values()) == pages_needed(arrival.shape, size or 0)
    assert placement.mems == tuple(sorted(pages))
    assert placement.memory_by_node == {}
    assert placement.degraded_reason == degraded


@pytest.mark.parametrize(
    ("arrival", "reason"),
    [
        pytest.param(
            Arrival(inventory(), HUGE), "0 of 0 1GiB huge pages free", id="host-without-huge-pages"
        ),
        pytest.param(
            Arrival(inventory(hugepages={0: (MIB2_PAGE, 8192)}), HUGE),
            "0 of 0 1GiB huge pages free",
            id="pages-of-another-size",
        ),
        pytest.param(
            Arrival(
                inventory(hugepages={0: (GIB_PAGE, 16)}),
                HUGE_PINNED_AFFINE,
                others=(pages_held(0, 12),),
            ),
            "4 of 16 1GiB huge pages free",
            id="pages-booked-by-others-never-degrade",
        ),
        pytest.param(
            Arrival(inventory(nodes=0), HUGE_AFFINE),
            "0 of 0 1GiB huge pages free",
            id="no-numa-topology-has-no-pages",
        ),
    ],
)
def test_hugepages_never_degraded(arrival: Arrival, reason: str) -> None:
    with pytest.raises(NoHugepages) as raised:
        arrival.place()
    assert raised.value.reason == reason
    assert raised.value.no_fit().kind == "hugepages"
    assert isinstance(raised.value, NotCandidate)


@pytest.mark.parametrize(
    ("size", "label"),
    [
        pytest.param(GIB_PAGE, "1GiB", id="1gib"),
        pytest.param(MIB2_PAGE, "2MiB", id="2mib"),
        pytest.param(4096, "4KiB", id="4kib"),
    ],
)
def test_size_label(size: int, label: str) -> None:
    assert size_label(size) == label


# --- balloons ------------------------------------------------------------------------------

WITH_PAGES_AND_GPU = inventory(hugepages={0: (GIB_PAGE, 16)}, gpu_nodes=[0])


@pytest.mark.parametrize(
    ("arrival", "balloon"),
    [
        pytest.param(
            Arrival(WITH_PAGES_AND_GPU, ratio=1.5), True, id="overcommitted-pool-balloons"
        ),
        pytest.param(Arrival(WITH_PAGES_AND_GPU, ratio=1), False, id="no-overcommit-no-balloon"),
        pytest.param(Arrival(WITH_PAGES_AND_GPU, ratio=None), False, id="default-ratio-no-balloon"),
        pytest.param(Arrival(WITH_PAGES_AND_GPU, ratio=0.5), False, id="undercommit-no-balloon"),
        pytest.param(
            Arrival(WITH_PAGES_AND_GPU, HUGE, ratio=1.5), False, id="huge-page-guest-never-balloons"
        ),
        pytest.param(
            Arrival(WITH_PAGES_AND_GPU, shape=guest(gpus=1), ratio=1.5),
            False,
            id="gpu-guest-never-balloons",
        ),
        pytest.param(
            Arrival(WITH_PAGES_AND_GPU, PINNED, ratio=1.5), True, id="pinned-guest-still-balloons"
        ),
    ],
)
def test_balloon(arrival: Arrival, balloon: bool) -> None:
    assert arrival.place().balloon is balloon


# --- stored form ---------------------------------------------------------------------------


def test_host_placement_json_round_trip() -> None:
    inv = inventory(hugepages={0: (GIB_PAGE, 16)})
    placements = [
        choose_host_placement(inv, guest(4, 8), PINNED_AFFINE),
        choose_host_placement(inv, guest(4, 8), PlacementPolicy(hugepage_size_bytes=GIB_PAGE)),
        choose_host_placement(inventory(nodes=0), guest(4), AFFINE, memory_ratio=2),
    ]
    for placement in placements:
        doc = placement.to_json()
        assert HostPlacement.from_json(doc) == placement
        assert set(doc) == {
            "cpus",
            "cpuset",
            "mems",
            "hugepageSizeBytes",
            "hugepagesByNode",
            "memoryByNode",
            "degradedReason",
            "balloon",
        }
    assert placements[2].to_json()["degradedReason"] == "NoNumaTopology"


# --- properties ----------------------------------------------------------------------------


@st.composite
def hosts(draw: st.DrawFn) -> tuple[Inventory, int]:
    nodes = draw(st.integers(0, 3))
    per_node = draw(st.integers(1, 12))
    count = max(nodes, 1) * per_node
    isolated = draw(st.sets(st.integers(0, count - 1)))
    pages = draw(st.dictionaries(st.integers(0, max(nodes - 1, 0)), st.integers(0, 24)))
    inv = inventory(
        nodes=nodes,
        cpus_per_node=per_node,
        isolated=sorted(isolated),
        node_memory=draw(st.sampled_from([16, 32, 64])),
        hugepages={n: (GIB_PAGE, total) for n, total in pages.items() if n < nodes},
        gpu_nodes=draw(st.lists(st.sampled_from([None, *range(nodes)]), max_size=2)),
    )
    return inv, draw(st.integers(0, 4))


policies = st.builds(
    PlacementPolicy,
    numa_affine=st.booleans(),
    pinned=st.sampled_from([True, True, False]),
    hugepage_size_bytes=st.sampled_from([None, None, GIB_PAGE]),
)
guests = st.tuples(
    st.builds(guest, vcpu=st.integers(1, 4), memory_gib=st.integers(1, 16)),
    st.one_of(st.none(), policies, policies),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(host=hosts(), arrivals=st.lists(guests, min_size=1, max_size=8))
def test_chooser_never_gives_reserved_or_another_guests_pinned_cpus(
    host: tuple[Inventory, int],
    arrivals: list[tuple[Shape, PlacementPolicy | None, bool]],
) -> None:
    inv, reserve = host
    reserved = reserved_cpus(inv, reserve)
    placed: list[HostPlacement] = []
    for shape, policy, with_gpu in arrivals:
        atoms = list(inv.gpus[:1]) if with_gpu else []
        try:
            placement = choose_host_placement(
                inv, shape, policy, gpus=atoms, others=placed, reserve_vcpu=reserve
            )
        except NotCandidate:
            continue
        pinned_before = {cpu for other in placed for cpu in other.cpus or ()}
        assert placement.cpuset, "a guest always has somewhere to run"
        assert not set(placement.cpuset) & reserved
        assert not set(placement.cpuset) & pinned_before
        if placement.cpus is not None:
            assert len(placement.cpus) == shape.vcpu
            assert len(set(placement.cpus)) == shape.vcpu
            assert set(placement.cpus) == set(placement.cpuset)
        placed.append(placement)
    for node in inv.numa_nodes:
        for pool in node.hugepages:
            booked = sum(
                p.hugepages_by_node.get(node.id, 0)
                for p in placed
                if p.hugepage_size_bytes == pool.size_bytes
            )
            assert booked <= pool.total
