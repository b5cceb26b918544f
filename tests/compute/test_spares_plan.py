"""The spares planner as a table: what the `spares` job deletes and places for one tenant's snapshot."""

from __future__ import annotations

import pytest

from bcfleet.domain.compute_settings import ComputeSettings
from bcfleet.domain.spares_plan import SpareView, plan_spares

POOL = "pool_a"


def settings(pool: str | None = POOL, **sizes: tuple[bool, int]) -> ComputeSettings:
    result = ComputeSettings(serverless_pool=pool)
    for name, (enabled, spares) in sizes.items():
        result = result.with_size(name, enabled=enabled, spares=spares)
    return result


def spare(
    n: int,
    size: str = "large",
    *,
    ready: bool = True,
    placed: bool = True,
    pool: str = POOL,
    stopped: bool = False,
) -> SpareView:
    return SpareView(f"ins_{n}", size, pool, placed, ready and placed, f"{n:04d}", stopped)


CASES = [
    pytest.param(settings(large=(True, 2)), [], [], {"large": 2}, id="nothing-yet-place-two"),
    pytest.param(
        settings(large=(True, 2)), [spare(1), spare(2)], [], {}, id="enough-spares-nothing-to-do"
    ),
    pytest.param(
        settings(large=(True, 2)), [spare(1)], [], {"large": 1}, id="one-taken-replace-it"
    ),
    pytest.param(
        settings(large=(True, 2)),
        [spare(1), spare(2, ready=False)],
        [],
        {},
        id="a-booting-spare-counts",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 2)),
        [spare(1), spare(2, placed=False)],
        [],
        {},
        id="a-pending-spare-counts-placement-retries-it",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 1)),
        [spare(1), spare(2), spare(3, ready=False)],
        [("ins_3", "spares lowered"), ("ins_2", "spares lowered")],
        {},
        id="lowered-booting-first-then-newest",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 1)),
        [spare(1), spare(2, placed=False)],
        [("ins_2", "spares lowered")],
        {},
        id="lowered-unplaced-first",
    ),  # fmt: skip
    pytest.param(
        settings(large=(False, 2)),
        [spare(1), spare(2, ready=False)],
        [("ins_1", "size turned off"), ("ins_2", "size turned off")],
        {},
        id="size-off-removes-its-pool-of-instances",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 0)),
        [spare(1)],
        [("ins_1", "spares lowered")],
        {},
        id="zero-spares-keeps-none-ready",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 1)),
        [spare(1, pool="pool_old")],
        [("ins_1", "serverless pool changed")],
        {"large": 1},
        id="pool-changed-move-them",
    ),  # fmt: skip
    pytest.param(
        settings(None, large=(True, 2)),
        [spare(1, pool="pool_old")],
        [("ins_1", "serverless pool changed")],
        {},
        id="no-serverless-pool-keeps-nothing",
    ),  # fmt: skip
    pytest.param(
        settings(large=(True, 2)),
        [spare(1), spare(2, stopped=True)],
        [("ins_2", "stopped")],
        {"large": 1},
        id="a-stopped-spare-is-replaced",
    ),  # fmt: skip
    pytest.param(
        settings(small=(True, 1), xlarge=(True, 3)),
        [spare(1, "xlarge")],
        [],
        {"small": 1, "xlarge": 2},
        id="each-size-on-its-own",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("current", "live", "release", "place"), CASES)
def test_plan_spares(
    current: ComputeSettings,
    live: list[SpareView],
    release: list[tuple[str, str]],
    place: dict[str, int],
) -> None:
    plan = plan_spares(current, live)
    assert list(plan.release) == release
    assert dict(plan.place) == place
