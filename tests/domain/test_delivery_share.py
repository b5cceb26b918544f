"""The webhooks job's fair share (domain/delivery_share.py): which due deliveries a round
sends, tenants taking turns within their budgets, one lane per destination."""

from __future__ import annotations

import pytest

from bcfleet.domain.delivery_share import Pending, Share, choose, destination, round_robin

A, B = "http://a.test/hook", "https://b.test:8443/x"


def due(*items: tuple[int, str, str]) -> list[Pending]:
    """Due deliveries oldest first: (id, tenant, url)."""
    return [Pending(i, tenant, destination(url)) for i, tenant, url in items]


@pytest.mark.parametrize(
    ("pending", "share", "ids"),
    [
        pytest.param([], Share(), [], id="nothing-due"),
        pytest.param(
            due((1, "acme", A), (2, "acme", A), (3, "acme", A), (4, "globex", B)),
            Share(),
            [1, 4, 2, 3],
            id="tenants-take-turns",
        ),
        pytest.param(
            due(*[(i, "acme", A) for i in range(1, 31)], (31, "globex", B)),
            Share(per_tenant=20),
            [1, 31, *range(2, 21)],
            id="a-tenant-sends-its-budget-and-no-more",
        ),
        pytest.param(
            due((1, "acme", A), (2, "acme", A), (3, "globex", B), (4, "initech", B)),
            Share(total=3),
            [1, 3, 4],
            id="the-round-total-cuts-the-last-turn",
        ),
        pytest.param(
            due((1, "globex", B), (2, "acme", A), (3, "globex", B)),
            Share(per_tenant=1),
            [1, 2],
            id="the-oldest-tenant-goes-first",
        ),
        pytest.param(due((1, "acme", A)), Share(per_tenant=0), [], id="no-budget-sends-nothing"),
    ],
)
def test_round_robin_across_tenants_within_the_budgets(
    pending: list[Pending], share: Share, ids: list[int]
) -> None:
    assert [p.id for p in round_robin(pending, share)] == ids


@pytest.mark.parametrize(
    ("pending", "lanes"),
    [
        pytest.param(
            due((1, "acme", A), (2, "acme", A), (3, "globex", B)),
            [[1, 2], [3]],
            id="one-lane-per-destination-in-order",
        ),
        pytest.param(
            due(*[(i, "acme", A) for i in range(1, 21)], (21, "globex", B)),
            [list(range(1, 21)), [21]],
            id="a-tenants-dead-receiver-holds-only-its-own-lane",
        ),
        pytest.param(
            due((1, "acme", A), (2, "globex", A)),
            [[1, 2]],
            id="two-tenants-one-receiver-one-lane",
        ),
        pytest.param(
            due((1, "acme", "http://A.test:80/x"), (2, "acme", "http://a.test/y")),
            [[1, 2]],
            id="the-same-receiver-however-spelled",
        ),
    ],
)
def test_lanes_keep_one_delivery_in_flight_per_destination(
    pending: list[Pending], lanes: list[list[int]]
) -> None:
    assert choose(pending, Share()) == lanes


@pytest.mark.parametrize(
    ("url", "key"),
    [
        pytest.param("http://a.test/hook", "http://a.test:80", id="http-default-port"),
        pytest.param("https://a.test/hook", "https://a.test:443", id="https-default-port"),
        pytest.param("http://127.0.0.1:8080/x", "http://127.0.0.1:8080", id="explicit-port"),
        pytest.param("http://a.test:99999/x", "http://a.test:99999/x", id="bad-port-itself"),
    ],
)
def test_a_destination_is_scheme_host_and_port(url: str, key: str) -> None:
    assert destination(url) == key
