"""Huge-page admission (domain/hugepage_admission.py): a start goes ahead only when the free
pages of its size on its NUMA nodes back its whole memory; never degraded."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.domain.hugepage_admission import (
    HostPools,
    HugepageRequest,
    Shortfall,
    admit_hugepages,
    admit_round,
)
from bcfleet.domain.shapes import HugepagePool, Shape
from bcfleet.errors import InvalidInputError

GIB = 1 << 30
MIB2 = 2 << 20


def request(
    memory_gib: int, size: int = GIB, nodes: tuple[int, ...] | None = (0,), guest_id: str = "g"
) -> HugepageRequest:
    return HugepageRequest(guest_id, Shape(vcpu=2, memory_gib=memory_gib, disk_gib=10), size, nodes)


def pools(**free_by_node: dict[int, int]) -> HostPools:
    """node0={GIB: 2} → node 0 has 2 free 1 GiB pages (of 8); "host" is the global pool."""
    return {
        (None if name == "host" else int(name.removeprefix("node"))): tuple(
            HugepagePool(size, total=8, free=free) for size, free in sizes.items()
        )
        for name, sizes in free_by_node.items()
    }


@pytest.mark.parametrize(
    ("wanted", "host", "shortfall"),
    [
        pytest.param(request(4), pools(node0={GIB: 4}), None, id="exactly-enough-pages-admit"),
        pytest.param(
            request(4),
            pools(node0={GIB: 2}, node1={GIB: 8}),
            "needs 4 × 1GiB pages on NUMA node 0, 2 free",
            id="pages-on-another-node-do-not-count",
        ),
        pytest.param(
            request(4),
            pools(node0={MIB2: 4096}),
            "needs 4 × 1GiB pages on NUMA node 0, 0 free",
            id="pages-of-another-size-do-not-count",
        ),
        pytest.param(
            request(3, MIB2),
            pools(node0={MIB2: 1535}),
            "needs 1536 × 2MiB pages on NUMA node 0, 1535 free",
            id="2-mib-pages-one-short",
        ),
        pytest.param(
            request(6, nodes=(0, 1)),
            pools(node0={GIB: 2}, node1={GIB: 4}),
            None,
            id="strict-numatune-over-two-nodes-sums-their-free-pages",
        ),
        pytest.param(
            request(8, nodes=(0, 1)),
            pools(node0={GIB: 2}, node1={GIB: 4}, node2={GIB: 8}),
            "needs 8 × 1GiB pages on NUMA nodes 0 and 1, 6 free",
            id="two-nodes-short-names-both",
        ),
        pytest.param(
            request(4, nodes=(3,)),
            pools(node0={GIB: 8}),
            "needs 4 × 1GiB pages on NUMA node 3, 0 free",
            id="a-node-the-host-lacks-has-no-pages",
        ),
        pytest.param(
            request(10, nodes=None),
            pools(node0={GIB: 4}, node1={GIB: 5}),
            "needs 10 × 1GiB pages on the host, 9 free",
            id="a-guest-without-mems-may-use-every-node",
        ),
        pytest.param(
            request(4, nodes=(0,)),
            pools(host={GIB: 4}),
            None,
            id="a-host-without-numa-nodes-backs-from-its-global-pool",
        ),
        pytest.param(
            request(4, nodes=(0,)),
            pools(host={GIB: 3}),
            "needs 4 × 1GiB pages on the host, 3 free",
            id="a-host-without-numa-nodes-short",
        ),
        pytest.param(request(1), {}, "needs 1 × 1GiB pages on NUMA node 0, 0 free", id="no-pools"),
    ],
)
def test_a_start_is_admitted_only_when_free_pages_back_it(
    wanted: HugepageRequest, host: HostPools, shortfall: str | None
) -> None:
    answer = admit_hugepages(wanted, host)
    assert answer.admitted is (shortfall is None)
    assert (answer.shortfall.message if answer.shortfall else None) == shortfall


@pytest.mark.parametrize(
    ("starts", "host", "admitted"),
    [
        pytest.param(
            [request(4, guest_id="a"), request(4, guest_id="b")],
            pools(node0={GIB: 6}),
            [True, False],
            id="two-starts-in-a-round-do-not-count-the-same-pages",
        ),
        pytest.param(
            [request(4, guest_id="a"), request(4, guest_id="b")],
            pools(node0={GIB: 8}),
            [True, True],
            id="two-starts-that-fit-together-both-go",
        ),
        pytest.param(
            [request(4, guest_id="a"), request(4, nodes=(1,), guest_id="b")],
            pools(node0={GIB: 4}, node1={GIB: 4}),
            [True, True],
            id="starts-on-different-nodes-do-not-compete",
        ),
        pytest.param(
            [request(4, guest_id="a"), request(2, MIB2, guest_id="b")],
            pools(node0={GIB: 4, MIB2: 1024}),
            [True, True],
            id="starts-of-different-sizes-do-not-compete",
        ),
        pytest.param(
            [request(9, guest_id="big"), request(4, guest_id="fits")],
            pools(node0={GIB: 6}),
            [False, True],
            id="a-refused-start-promises-nothing",
        ),
        pytest.param(
            [request(4, nodes=(0, 1), guest_id="a"), request(4, nodes=(0,), guest_id="b")],
            pools(node0={GIB: 4}, node1={GIB: 4}),
            [True, False],
            id="a-two-node-start-may-take-all-of-a-shared-node-first",
        ),
    ],
)
def test_a_round_counts_the_pages_promised_to_earlier_starts(
    starts: list[HugepageRequest], host: HostPools, admitted: list[bool]
) -> None:
    assert [answer.admitted for answer in admit_round(starts, host)] == admitted


def test_a_shortfall_is_a_condition_naming_size_nodes_and_pages() -> None:
    (answer,) = admit_round([request(4)], pools(node0={GIB: 2}))
    assert answer.shortfall == Shortfall(GIB, (0,), needed=4, free=2)
    assert answer.shortfall.condition() == {
        "type": "StartRefused",
        "status": "True",
        "reason": "NotEnoughHugepages",
        "message": "huge pages: needs 4 × 1GiB pages on NUMA node 0, 2 free; "
        "the guest is not started",
    }
    assert answer.shortfall.details() == {
        "hugepageSizeBytes": GIB,
        "numaNodes": [0],
        "pagesNeeded": 4,
        "pagesFree": 2,
    }


def spec(placement: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "gst_1",
        "state": "running",
        "shape": {"vcpu": 2, "memoryGiB": 4, "diskGiB": 10, "gpus": 0},
        "placement": {"cpus": None, "cpuset": [2, 3], **placement},
    }


def test_the_request_of_an_instance_spec() -> None:
    wanted = HugepageRequest.from_spec(spec({"mems": [1, 0], "hugepageSizeBytes": GIB}))
    assert wanted == HugepageRequest("gst_1", Shape(2, 4, 10), GIB, (0, 1))
    assert wanted.pages == 4
    assert HugepageRequest.from_spec(spec({"mems": None, "hugepageSizeBytes": None})) is None


@pytest.mark.parametrize(
    "placement",
    [
        pytest.param({"mems": [0], "hugepageSizeBytes": "1G"}, id="size-not-a-number"),
        pytest.param({"mems": "0", "hugepageSizeBytes": GIB}, id="mems-not-a-list"),
        pytest.param({"mems": [0], "hugepageSizeBytes": 0}, id="size-zero"),
    ],
)
def test_a_malformed_spec_is_invalid_input(placement: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        HugepageRequest.from_spec(spec(placement))
