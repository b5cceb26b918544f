"""The size catalogue and credits of document 004, with the document's numbers and words."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bcfleet.domain.sizes import (
    API_DEFAULT_SIZE,
    CREDITS_PER_INSTANCE_HOUR,
    DEFAULT_SIZE,
    HOURS_PER_MONTH,
    LEGACY_SERVICE_SIZE,
    SIZE_NAMES,
    SIZES,
    SPARES_MAX,
    credits_per_month,
    describe_both,
    format_credits,
    kept_spares,
    label,
    label_with_shape,
    parse_size,
    size_for_api_service,
    size_of_legacy_service,
    total_credits_per_month,
)
from bcfleet.errors import InvalidInputError


def test_the_four_sizes_in_order() -> None:
    assert SIZE_NAMES == ("small", "medium", "large", "xlarge")
    assert tuple(SIZES) == SIZE_NAMES


@pytest.mark.parametrize(
    ("name", "label_", "service", "index"),
    [
        pytest.param("small", "Small", (1, 2), ("0.4", 4), id="small-1vcpu-2gib-index-0.4+-4gib"),
        pytest.param(
            "medium", "Medium", (1, 4), ("0.9", 8), id="medium-1vcpu-4gib-index-0.9+-8gib"
        ),
        pytest.param("large", "Large", (2, 8), ("1.7", 16), id="large-2vcpu-8gib-index-1.7+-16gib"),
        pytest.param(
            "xlarge", "Extra large", (4, 16), ("3.5", 32), id="xlarge-4vcpu-16gib-index-3.5+-32gib"
        ),
    ],
)
def test_each_size_lists_service_and_index_compute(
    name: str, label_: str, service: tuple[int, int], index: tuple[str, int]
) -> None:
    size = SIZES[name]
    assert size.label == label_
    assert (size.service.vcpu, size.service.memory_gib) == service
    assert (size.index.vcpu, size.index.memory_gib) == (Decimal(index[0]), index[1])
    assert size.index.burstable


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("small", "Small (1 vCPU, 2 GiB memory)", id="small"),
        pytest.param("medium", "Medium (1 vCPU, 4 GiB memory)", id="medium-as-in-the-document"),
        pytest.param("large", "Large (2 vCPU, 8 GiB memory)", id="large"),
        pytest.param("xlarge", "Extra large (4 vCPU, 16 GiB memory)", id="xlarge"),
    ],
)
def test_default_size_list_shows_service_compute(name: str, text: str) -> None:
    assert label_with_shape(name) == text


def test_compute_tab_lists_both_computes_with_plus_for_index_cpu() -> None:
    assert describe_both("small") == (
        "Small: Services 1 vCPU, 2 GiB memory. Indexes 0.4+ vCPU, 4 GiB memory."
    )
    assert describe_both("xlarge") == (
        "Extra large: Services 4 vCPU, 16 GiB memory. Indexes 3.5+ vCPU, 32 GiB memory."
    )


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        pytest.param("large", "large", id="exact"),
        pytest.param(" XLarge ", "xlarge", id="case-and-blanks-ignored"),
    ],
)
def test_parse_size_accepts_names(raw: str, name: str) -> None:
    assert parse_size(raw) == name


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("huge", id="unknown-name"),
        pytest.param("Extra large", id="label-is-not-a-name"),
        pytest.param("", id="empty"),
        pytest.param(3, id="not-a-string"),
        pytest.param(None, id="none"),
    ],
)
def test_parse_size_rejects_others_listing_valid_names(raw: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_size(raw, field="defaultSize")
    assert caught.value.code == "INVALID_INPUT"
    assert "small, medium, large, xlarge" in caught.value.message
    assert caught.value.details["valid"] == SIZE_NAMES
    assert caught.value.details["field"] == "defaultSize"


def test_labels() -> None:
    assert [label(n) for n in SIZE_NAMES] == ["Small", "Medium", "Large", "Extra large"]


def test_services_from_before_sizes_are_large_with_8_gib() -> None:
    assert LEGACY_SERVICE_SIZE == "large"
    assert size_of_legacy_service(None) == "large"
    assert SIZES[size_of_legacy_service(None)].service.memory_gib == 8
    assert size_of_legacy_service("small") == "small"


def test_api_services_without_a_size_use_medium_regardless_of_default() -> None:
    assert API_DEFAULT_SIZE == "medium"
    assert DEFAULT_SIZE == "medium"
    assert size_for_api_service(None) == "medium"
    assert size_for_api_service("xlarge") == "xlarge"


def test_credit_constants() -> None:
    assert (SPARES_MAX, CREDITS_PER_INSTANCE_HOUR, HOURS_PER_MONTH) == (10, 1, 720)


@pytest.mark.parametrize(
    ("spares", "credits"),
    [
        pytest.param(0, 0, id="zero-spares-cost-nothing"),
        pytest.param(1, 720, id="one-spare-720"),
        pytest.param(2, 1440, id="two-spares-1440-as-in-the-document"),
        pytest.param(10, 7200, id="maximum-10-spares-7200"),
        pytest.param(15, 7200, id="above-maximum-costs-the-10-kept"),
    ],
)
def test_credits_per_month(spares: int, credits: int) -> None:
    assert credits_per_month(spares) == credits


def test_two_spares_show_1_440() -> None:
    assert format_credits(credits_per_month(2)) == "1,440"


@pytest.mark.parametrize(
    "spares",
    [pytest.param(-1, id="negative"), pytest.param(True, id="bool"), pytest.param(1.5, id="float")],
)
def test_spares_must_be_a_non_negative_whole_number(spares: object) -> None:
    with pytest.raises(InvalidInputError):
        kept_spares(spares)  # type: ignore[arg-type]


def test_more_than_10_spares_are_kept_as_10() -> None:
    assert kept_spares(11) == 10
    assert kept_spares(10) == 10
    assert kept_spares(0) == 0


def test_total_counts_enabled_sizes_only() -> None:
    spares = {"small": 1, "medium": 2, "large": 3, "xlarge": 4}
    assert total_credits_per_month(spares, enabled=["medium", "large"]) == 5 * 720
    assert total_credits_per_month(spares, enabled=SIZE_NAMES) == 10 * 720
    assert total_credits_per_month(spares, enabled=[]) == 0
