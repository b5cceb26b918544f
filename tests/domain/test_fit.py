"""Hosted capacity math: shapes, node_resources rows, the fit check, counted reasons, weighers."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bcfleet.domain.fit import (
    PLACEMENT_CAPABILITY_LABEL,
    HostSnapshot,
    NoFit,
    ResourceRow,
    Weigher,
    capacity,
    check_fit,
    clamp_ratio,
    derive_allocatable,
    explain_no_fit,
    free_fraction,
    free_fractions,
    min_allocatable,
    next_row,
    pack,
    rank,
    rank_counted,
    resize_conflict,
    rows_to_write,
    spread,
    weigher,
)
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.shapes import (
    Inventory,
    PlacementPolicy,
    Shape,
    placement_from_json,
    shape_delta,
)

SMALL = Shape(vcpu=2, memory_gib=4, disk_gib=40)
GPU1 = Shape(vcpu=8, memory_gib=32, disk_gib=200, gpus=1)
PLACED = PlacementPolicy(numa_affine=True, pinned=True)


def inventory(vcpu: int = 34, memory_gib: float = 264, disk_gib: float = 2100) -> Inventory:
    return Inventory.from_json(
        {
            "cpus": [{"id": i, "numaNode": 0, "isolated": False} for i in range(vcpu)],
            "numaNodes": [{"id": 0, "memoryGiB": memory_gib, "hugepages": []}],
            "memoryGiB": memory_gib,
            "diskGiB": disk_gib,
            "gpus": [],
        }
    )


def row(resource: str, allocatable: int, ratio: float = 1.0, allocated: int = 0) -> ResourceRow:
    return ResourceRow(resource, allocatable, ratio, capacity(allocatable, ratio), allocated)


def host(
    *,
    vcpu: tuple[int, int] = (32, 0),
    memory: tuple[int, int] = (256, 0),
    disk: tuple[int, int] = (2000, 0),
    gpus: tuple[int, int] = (0, 0),
    **kwargs: object,
) -> HostSnapshot:
    """A host snapshot from (capacity, allocated) per scalar and (free, total) GPUs."""
    rows = {
        "vcpu": row("vcpu", vcpu[0], allocated=vcpu[1]),
        "memoryGiB": row("memoryGiB", memory[0], allocated=memory[1]),
        "diskGiB": row("diskGiB", disk[0], allocated=disk[1]),
    }
    return HostSnapshot(
        node_id=str(kwargs.pop("node_id", "node_a")),
        rows=rows,
        gpus_free=gpus[0],
        gpus_total=gpus[1],
        **kwargs,  # type: ignore[arg-type]
    )


# --- ratios and capacity -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        pytest.param(None, 1.0, id="default-is-1"),
        pytest.param(2, 2.0, id="inside-range-kept"),
        pytest.param(0, 0.1, id="zero-clamped-to-0.1"),
        pytest.param(0.05, 0.1, id="below-range-clamped-to-0.1"),
        pytest.param(1000, 100.0, id="above-range-clamped-to-100"),
        pytest.param(math.nan, 1.0, id="nan-is-default"),
    ],
)
def test_clamp_ratio(ratio: float | None, expected: float) -> None:
    assert clamp_ratio(ratio) == expected


@pytest.mark.parametrize(
    ("allocatable", "ratio", "expected"),
    [
        pytest.param(16, 2, 32, id="document-16-vcpu-ratio-2-is-32"),
        pytest.param(16, 1, 16, id="ratio-1-is-allocatable"),
        pytest.param(10, 1.5, 15, id="fractional-ratio"),
        pytest.param(7, 1.5, 10, id="floors"),
        pytest.param(100, 0.29, 29, id="decimal-not-binary-float"),
        pytest.param(16, 1000, 1600, id="ratio-clamped-to-100"),
        pytest.param(0, 2, 0, id="nothing-allocatable"),
    ],
)
def test_capacity(allocatable: int, ratio: float, expected: int) -> None:
    assert capacity(allocatable, ratio) == expected


@pytest.mark.parametrize(
    ("allocated", "ratio", "expected"),
    [
        pytest.param(0, 2, 0, id="nothing-allocated"),
        pytest.param(40, 1, 40, id="ratio-1-is-allocated"),
        pytest.param(41, 2, 21, id="ratio-2-rounds-up"),
        pytest.param(10, 0.5, 20, id="ratio-below-1"),
        pytest.param(29, 0.29, 100, id="decimal-ratio"),
    ],
)
def test_min_allocatable_is_least_that_holds_allocated(
    allocated: int, ratio: float, expected: int
) -> None:
    assert min_allocatable(allocated, ratio) == expected
    assert capacity(expected, ratio) >= allocated
    assert expected == 0 or capacity(expected - 1, ratio) < allocated


def test_allocatable_16_ratio_2_takes_32_vcpu_and_not_one_more() -> None:
    rows = {**host().rows, "vcpu": row("vcpu", 16, ratio=2)}
    placed = 0
    while check_fit(HostSnapshot("h", rows=rows), SMALL) is None:
        rows["vcpu"] = rows["vcpu"]._replace(allocated=rows["vcpu"].allocated + SMALL.vcpu)
        placed += SMALL.vcpu
    assert placed == 32
    one_more = Shape(vcpu=1, memory_gib=1, disk_gib=1)
    assert check_fit(HostSnapshot("h", rows=rows), one_more) == NoFit(
        "vcpu", "vcpu 32 of 32 allocated"
    )


# --- rows from inventory -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inv", "reserve", "expected"),
    [
        pytest.param(
            inventory(34, 264, 2100),
            HostReserve(),
            {"vcpu": 32, "memoryGiB": 256, "diskGiB": 2000},
            id="default-reserve-2-vcpu-8-gib-100-gib",
        ),
        pytest.param(
            inventory(1, 4, 50),
            HostReserve(),
            {"vcpu": 0, "memoryGiB": 0, "diskGiB": 0},
            id="never-below-zero",
        ),
        pytest.param(
            inventory(16, 64.7, 500.9),
            HostReserve(vcpu=4, memory_gib=0, disk_gib=0),
            {"vcpu": 12, "memoryGiB": 64, "diskGiB": 500},
            id="configured-reserve-and-fractional-inventory-floors",
        ),
        pytest.param(None, HostReserve(), None, id="no-inventory-no-rows"),
    ],
)
def test_derive_allocatable(
    inv: Inventory | None, reserve: HostReserve, expected: dict[str, int] | None
) -> None:
    assert derive_allocatable(inv, reserve) == expected


def test_host_reserve_overrides_from_pool_policy() -> None:
    assert HostReserve().with_overrides({"vcpu": 4}) == HostReserve(4, 8, 100)
    assert HostReserve().with_overrides(None) == HostReserve()


@pytest.mark.parametrize(
    ("old", "inv", "ratio", "expected"),
    [
        pytest.param(None, inventory(18), 2, row("vcpu", 16, 2), id="new-host-gets-a-row"),
        pytest.param(row("vcpu", 16, 2, 6), inventory(18), 2, None, id="unchanged-writes-nothing"),
        pytest.param(
            row("vcpu", 16, 2, 6), inventory(34), 2, row("vcpu", 32, 2, 6), id="inventory-grows"
        ),
        pytest.param(
            row("vcpu", 16, 2, 6), inventory(18), 3, row("vcpu", 16, 3, 6), id="ratio-changes"
        ),
        pytest.param(
            row("vcpu", 16, 1, 12),
            inventory(13),
            1,
            row("vcpu", 12, 1, 12),
            id="shrinking-host-keeps-allocatable-at-allocated-out-of-its-reserve",
        ),
        pytest.param(
            row("vcpu", 16, 1, 12),
            inventory(10),
            1,
            row("vcpu", 10, 1, 12),
            id="shrinking-host-never-claims-more-than-it-reports",
        ),
        pytest.param(
            row("vcpu", 16, 2, 20),
            inventory(12),
            2,
            row("vcpu", 10, 2, 20),
            id="shrinking-host-keeps-what-its-guests-occupy-under-overcommit",
        ),
        pytest.param(
            row("vcpu", 16, 2, 20),
            inventory(18),
            1,
            row("vcpu", 16, 1, 20),
            id="lowered-ratio-lowers-capacity-not-allocatable",
        ),
        pytest.param(
            row("vcpu", 8, 1, 8),
            inventory(10),
            0.5,
            row("vcpu", 8, 0.5, 8),
            id="document-10-cpus-8-allocated-ratio-half-is-capacity-4",
        ),
        pytest.param(
            row("vcpu", 16, 0.5, 8),
            inventory(10),
            0.5,
            row("vcpu", 8, 0.5, 8),
            id="a-row-claiming-more-than-the-host-reports-comes-back-to-it",
        ),
        pytest.param(
            row("vcpu", 12, 1, 2),
            inventory(10),
            1,
            row("vcpu", 8, 1, 2),
            id="shrinks-to-inventory-once-guests-left",
        ),
        pytest.param(row("vcpu", 16, 2, 0), None, 2, None, id="no-inventory-writes-nothing"),
        pytest.param(None, inventory(18), 500, row("vcpu", 16, 100), id="ratio-clamped-in-row"),
    ],
)
def test_next_row(
    old: ResourceRow | None, inv: Inventory | None, ratio: float, expected: ResourceRow | None
) -> None:
    assert next_row("vcpu", old, inv, HostReserve(), ratio) == expected


def test_rows_to_write_only_what_changed() -> None:
    inv = inventory(18, 72, 1100)
    first = rows_to_write({}, inv, HostReserve(), {"vcpu": 2})
    assert [r.resource for r in first] == ["vcpu", "memoryGiB", "diskGiB"]
    assert {r.resource: r.capacity for r in first} == {"vcpu": 32, "memoryGiB": 64, "diskGiB": 1000}
    old = {r.resource: r for r in first}
    assert rows_to_write(old, inv, HostReserve(), {"vcpu": 2}) == []
    again = rows_to_write(old, inv, HostReserve(), {"vcpu": 2, "memoryGiB": 1.5})
    assert again == [row("memoryGiB", 64, 1.5)]


# --- the fit check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshot", "shape", "placement", "expected"),
    [
        pytest.param(host(), SMALL, None, None, id="fits"),
        pytest.param(host(vcpu=(32, 30)), SMALL, None, None, id="fits-exactly"),
        pytest.param(
            HostSnapshot("h"),
            SMALL,
            None,
            NoFit("noInventory", "no inventory"),
            id="no-rows-is-no-inventory",
        ),
        pytest.param(
            host(draining=True), SMALL, None, NoFit("draining", "draining"), id="draining"
        ),
        pytest.param(
            host(),
            SMALL,
            PLACED,
            NoFit("noPlacementCapability", "no placement capability"),
            id="placement-flavor-needs-capability-label",
        ),
        pytest.param(
            host(labels={PLACEMENT_CAPABILITY_LABEL: "false"}),
            SMALL,
            PLACED,
            NoFit("noPlacementCapability", "no placement capability"),
            id="capability-label-false-is-no-capability",
        ),
        pytest.param(
            host(labels={PLACEMENT_CAPABILITY_LABEL: "true"}),
            SMALL,
            PLACED,
            None,
            id="placement-flavor-fits-labelled-host",
        ),
        pytest.param(
            host(vcpu=(32, 31)),
            SMALL,
            None,
            NoFit("vcpu", "vcpu 31 of 32 allocated"),
            id="vcpu-full",
        ),
        pytest.param(
            host(memory=(256, 254)),
            SMALL,
            None,
            NoFit("memoryGiB", "memoryGiB 254 of 256 allocated"),
            id="memory-full",
        ),
        pytest.param(
            host(disk=(2000, 1990)),
            SMALL,
            None,
            NoFit("diskGiB", "diskGiB 1990 of 2000 allocated"),
            id="disk-full",
        ),
        pytest.param(
            HostSnapshot("h", rows={"vcpu": row("vcpu", 32), "memoryGiB": row("memoryGiB", 256)}),
            SMALL,
            None,
            NoFit("diskGiB", "no diskGiB inventory"),
            id="missing-row-is-no-candidate",
        ),
        pytest.param(
            host(gpus=(0, 1)), GPU1, None, NoFit("gpu", "0 of 1 gpu free"), id="no-gpu-free"
        ),
        pytest.param(
            host(gpus=(2, 8)),
            Shape(8, 32, 200, gpus=3),
            None,
            NoFit("gpu", "2 of 8 gpu free"),
            id="gpus-never-overcommit",
        ),
        pytest.param(host(gpus=(1, 8)), GPU1, None, None, id="gpu-free-fits"),
        pytest.param(
            host(vcpu=(32, 31), gpus=(0, 1)),
            GPU1,
            None,
            NoFit("vcpu", "vcpu 31 of 32 allocated"),
            id="first-reason-wins",
        ),
    ],
)
def test_check_fit(
    snapshot: HostSnapshot,
    shape: Shape,
    placement: PlacementPolicy | None,
    expected: NoFit | None,
) -> None:
    assert check_fit(snapshot, shape, placement) == expected


def test_gpus_never_overcommit_whatever_the_scalar_ratio() -> None:
    rows = {r: row(r, 100, ratio=100) for r in ("vcpu", "memoryGiB", "diskGiB")}
    snapshot = HostSnapshot("h", rows=rows, gpus_total=1, gpus_free=1)
    assert check_fit(snapshot, GPU1) is None
    taken = HostSnapshot("h", rows=rows, gpus_total=1, gpus_free=0)
    assert check_fit(taken, GPU1) == NoFit("gpu", "0 of 1 gpu free")


# --- explaining a no -----------------------------------------------------------------------

DOCUMENT_REASONS = (
    [NoFit("noInventory", "no inventory")] * 2
    + [NoFit("vcpu", "vcpu 30 of 32 allocated")] * 7
    + [NoFit("gpu", "0 of 1 gpu free")] * 3
)


@pytest.mark.parametrize(
    ("reasons", "by_kind", "expected"),
    [
        pytest.param(
            DOCUMENT_REASONS,
            False,
            "no host fits (12 hosts): 7 × vcpu 30 of 32 allocated, 3 × 0 of 1 gpu free, "
            "2 × no inventory",
            id="document-example",
        ),
        pytest.param(
            ["vcpu 30 of 32 allocated"] * 7 + ["0 of 1 gpu free"] * 3 + ["no inventory"] * 2,
            False,
            "no host fits (12 hosts): 7 × vcpu 30 of 32 allocated, 3 × 0 of 1 gpu free, "
            "2 × no inventory",
            id="plain-texts-group-too",
        ),
        pytest.param(
            ["no inventory", "draining"],
            False,
            "no host fits (2 hosts): 1 × draining, 1 × no inventory",
            id="ties-by-text",
        ),
        pytest.param(
            ["draining"], False, "no host fits (1 host): 1 × draining", id="one-host-singular"
        ),
        pytest.param([], False, "no host fits (0 hosts)", id="empty-pool"),
        pytest.param(
            [NoFit("vcpu", "vcpu 30 of 32 allocated"), NoFit("vcpu", "vcpu 31 of 32 allocated")],
            False,
            "no host fits (2 hosts): 1 × vcpu 30 of 32 allocated, 1 × vcpu 31 of 32 allocated",
            id="differing-numbers-apart-by-text",
        ),
        pytest.param(
            [NoFit("vcpu", "vcpu 30 of 32 allocated"), NoFit("vcpu", "vcpu 31 of 32 allocated")]
            + [NoFit("gpu", "0 of 1 gpu free")],
            True,
            "no host fits (3 hosts): 2 × not enough vcpu, 1 × 0 of 1 gpu free",
            id="by-kind-groups-differing-numbers",
        ),
        pytest.param(
            DOCUMENT_REASONS,
            True,
            "no host fits (12 hosts): 7 × vcpu 30 of 32 allocated, 3 × 0 of 1 gpu free, "
            "2 × no inventory",
            id="by-kind-keeps-identical-texts",
        ),
    ],
)
def test_explain_no_fit(reasons: list[NoFit | str], by_kind: bool, expected: str) -> None:
    assert explain_no_fit(reasons, by_kind=by_kind) == expected


def test_explanation_does_not_depend_on_host_order() -> None:
    assert explain_no_fit(DOCUMENT_REASONS) == explain_no_fit(list(reversed(DOCUMENT_REASONS)))


# --- weighers ------------------------------------------------------------------------------

EMPTY = host(node_id="empty")
HALF = host(node_id="half", vcpu=(32, 16), memory=(256, 128), disk=(2000, 1000))
FULL = host(node_id="full", vcpu=(32, 32), memory=(256, 256), disk=(2000, 2000))


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param("spread", ["empty", "half", "full"], id="spread-most-free-first"),
        pytest.param("pack", ["full", "half", "empty"], id="pack-least-free-first"),
    ],
)
def test_weighers(strategy: str, expected: list[str]) -> None:
    ranked = rank([HALF, FULL, EMPTY], weigher(strategy))
    assert [h.node_id for h in ranked] == expected


def test_equal_scores_rank_by_node_id() -> None:
    twins = [host(node_id="b"), host(node_id="a"), host(node_id="c")]
    assert [h.node_id for h in rank(twins, spread)] == ["a", "b", "c"]
    assert [h.node_id for h in rank(twins, pack)] == ["a", "b", "c"]


def test_any_function_plugs_in_as_weigher() -> None:
    fewest_gpus = [host(node_id="g8", gpus=(8, 8)), host(node_id="g0")]
    ranked = rank(fewest_gpus, lambda h: -h.gpus_total)
    assert [h.node_id for h in ranked] == ["g0", "g8"]


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="spread or pack"):
        weigher("random")


# --- resize --------------------------------------------------------------------------------


def test_shape_delta_growth_and_shrinkage() -> None:
    delta = shape_delta(Shape(2, 4, 40), Shape(4, 2, 40))
    assert delta.growth() == {"vcpu": 2}
    assert delta.shrinkage() == {"memoryGiB": 2}
    assert not delta.changes_gpus
    assert shape_delta(GPU1, Shape(8, 32, 200, gpus=2)).changes_gpus
    assert shape_delta(SMALL, SMALL).is_zero


@pytest.mark.parametrize(
    ("growth", "expected"),
    [
        pytest.param({"vcpu": 2}, None, id="growth-fits"),
        pytest.param({"vcpu": 3}, "vcpu", id="vcpu-growth-conflicts"),
        pytest.param({"vcpu": 2, "diskGiB": 11}, "diskGiB", id="names-what-ran-out"),
        pytest.param({}, None, id="pure-shrink-always-fits"),
    ],
)
def test_resize_conflict(growth: dict[str, int], expected: str | None) -> None:
    rows = host(vcpu=(32, 30), disk=(2000, 1990)).rows
    assert resize_conflict(rows, growth) == expected


# --- shapes as JSON ------------------------------------------------------------------------


def test_shape_json_round_trip_and_quota() -> None:
    doc = {"vcpu": 8, "memoryGiB": 32, "diskGiB": 200, "gpus": 1}
    assert Shape.from_json({**doc, "name": "gpu1.l40s"}).to_json() == doc
    assert GPU1.quota_charge() == {"vcpu": 8, "memoryGiB": 32, "diskGiB": 200, "gpu": 1}
    assert "gpu" not in SMALL.quota_charge()
    assert Shape.from_json({"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}).gpus == 0


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"vcpu": 0, "memoryGiB": 4, "diskGiB": 40}, id="zero-vcpu"),
        pytest.param({"vcpu": 2, "memoryGiB": 4}, id="missing-disk"),
        pytest.param({"vcpu": 2.5, "memoryGiB": 4, "diskGiB": 40}, id="fractional-vcpu"),
        pytest.param({"vcpu": True, "memoryGiB": 4, "diskGiB": 40}, id="bool-is-not-a-number"),
        pytest.param({"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "gpus": -1}, id="negative-gpus"),
    ],
)
def test_bad_shape(doc: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Shape.from_json(doc)


def test_placement_policy_json() -> None:
    doc = {"numaAffine": True, "pinned": True, "hugepageSizeBytes": 1073741824}
    assert PlacementPolicy.from_json(doc).to_json() == doc
    assert placement_from_json(doc) == PlacementPolicy(True, True, 1073741824)
    assert placement_from_json(None) is None
    assert placement_from_json({}) is None
    assert placement_from_json({"numaAffine": False, "pinned": False}) is None


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"hugepageSizeBytes": 3000}, id="hugepage-below-4096"),
        pytest.param({"hugepageSizeBytes": 3 << 20}, id="hugepage-not-power-of-two"),
        pytest.param({"pinned": "yes"}, id="flag-not-bool"),
        pytest.param({"cpuPolicy": "dedicated"}, id="unknown-field"),
    ],
)
def test_bad_placement(doc: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PlacementPolicy.from_json(doc)


def test_inventory_json_round_trip() -> None:
    doc = {
        "cpus": [
            {"id": 0, "numaNode": 0, "isolated": False},
            {"id": 1, "numaNode": 0, "isolated": True},
        ],
        "numaNodes": [
            {
                "id": 0,
                "memoryGiB": 128,
                "hugepages": [{"sizeBytes": 1073741824, "total": 64, "free": 64}],
            }
        ],
        "memoryGiB": 256,
        "diskGiB": 2000,
        "gpus": [{"model": "L40S", "pciAddress": "0000:17:00.0", "numaNode": None}],
    }
    inv = Inventory.from_json(doc)
    assert inv.vcpu == 2
    assert inv.to_json() == doc
    with pytest.raises(ValueError):
        Inventory.from_json({"cpus": []})


def test_a_host_holds_nothing_only_with_rows_and_nothing_allocated_on_any() -> None:
    assert host().holds_nothing
    assert not host(vcpu=(32, 2)).holds_nothing
    assert not host(disk=(2000, 40)).holds_nothing
    assert not HostSnapshot(node_id="node_b").holds_nothing  # no inventory: nothing known


def test_a_candidate_snapshot_is_what_the_constructor_makes() -> None:
    rows = {"vcpu": ResourceRow("vcpu", 64, 2.0, 128, 6)}
    fast = HostSnapshot.of_candidate(
        "node_x", rows, gpus_total=4, gpus_free=1, labels={"zone": "a"}, inventory_generation=7
    )
    made = HostSnapshot(
        node_id="node_x",
        rows=rows,
        gpus_total=4,
        gpus_free=1,
        draining=False,
        labels={"zone": "a"},
        inventory_generation=7,
    )
    assert fast == made
    assert dataclasses.asdict(fast) == dataclasses.asdict(made)
    assert set(vars(fast)) == {f.name for f in dataclasses.fields(HostSnapshot)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.node_id = "node_y"  # type: ignore[misc]


# --- ranking from the rows' counts ---------------------------------------------------------


def scalar_counts(host: HostSnapshot) -> list[tuple[int, int]]:
    """A host as free_fractions takes it: each row's (capacity, allocated), in SCALARS order."""
    rows = host.rows
    return [
        (rows[r].capacity, rows[r].allocated) for r in ("vcpu", "memoryGiB", "diskGiB") if r in rows
    ]


RANKED_ALIKE = [
    host(node_id="d", vcpu=(32, 8)),
    host(node_id="b", vcpu=(32, 16), memory=(256, 128)),
    host(node_id="a", vcpu=(32, 8)),  # d's twin: the tie goes to the node id
    host(node_id="c", vcpu=(0, 0), memory=(256, 256)),  # a row without capacity is left out
    host(node_id="e", disk=(2000, 2500)),  # held over capacity: that row counts as full
]


@pytest.mark.parametrize(
    ("by", "expected"),
    [(spread, ["a", "d", "b", "e", "c"]), (pack, ["c", "b", "e", "a", "d"])],
    ids=["spread", "pack"],
)
def test_ranking_from_counts_is_ranking_the_snapshots(by: Weigher, expected: list[str]) -> None:
    counts = [scalar_counts(h) for h in RANKED_ALIKE]
    ranked = rank_counted(RANKED_ALIKE, [h.node_id for h in RANKED_ALIKE], counts, by)
    assert ranked == rank(RANKED_ALIKE, by)
    assert [h.node_id for h in ranked or []] == expected


def test_ranking_from_counts_declines_another_weigher() -> None:
    counts = [scalar_counts(h) for h in RANKED_ALIKE]
    ids = [h.node_id for h in RANKED_ALIKE]
    assert rank_counted(RANKED_ALIKE, ids, counts, lambda h: -h.gpus_total) is None


def test_free_fractions_are_each_hosts_free_fraction() -> None:
    hosts = [*RANKED_ALIKE, HostSnapshot("bare"), EMPTY, HALF, FULL]
    fractions = free_fractions([scalar_counts(h) for h in hosts])
    assert fractions == [free_fraction(h) for h in hosts]
    assert fractions[-4:] == [0.0, 1.0, 0.5, 0.0]
    assert fractions[3] == 0.5  # vcpu left out (no capacity): memory full, disk empty
