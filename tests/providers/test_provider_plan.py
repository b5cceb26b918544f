"""The pure decider of providers.reconcile: which servers to create, record, delete or leave alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bcfleet.domain.provider_plan import (
    LABEL_FLEET,
    LABEL_INSTANCE,
    LABEL_POOL,
    InstanceView,
    ProviderPlan,
    ServerView,
    plan_account,
    server_name,
)

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
GRACE = 300.0
FLEET = "flt_01jzfleet"
POOL = "pool_01jzmine"
OTHER_POOL = "pool_01jzother"
I1 = "ins_01jzaaaa"


def inst(state: str = "provisioning", server: str | None = None, status: str | None = None,
         instance_id: str = I1, offer: str | None = "cx23") -> InstanceView:  # fmt: skip
    return InstanceView(instance_id, POOL, state, offer, server, status)


def srv(server_id: str = "1", *, instance: str | None = I1, pool: str = POOL,
        fleet: str = FLEET, name: str | None = None, status: str = "running",
        age: float = 0.0) -> ServerView:  # fmt: skip
    labels = {LABEL_FLEET: fleet, LABEL_POOL: pool}
    if instance is not None:
        labels[LABEL_INSTANCE] = instance
    default_name = server_name(instance) if instance else f"srv-{server_id}"
    return ServerView(server_id, name or default_name, status, NOW - timedelta(seconds=age), labels)


def plan(instances: list[InstanceView], servers: list[ServerView],
         states: dict[str, str] | None = None) -> ProviderPlan:  # fmt: skip
    return plan_account(
        fleet_id=FLEET, pool_ids=[POOL], known_pool_ids=[POOL, OTHER_POOL], instances=instances,
        servers=servers, states=states or {}, now=NOW, grace_seconds=GRACE,
    )  # fmt: skip


def summary(result: ProviderPlan) -> dict[str, list[str]]:
    """Each non-empty kind of action with the ids it concerns, for compact expectations."""
    kinds = {
        "create": [c.instance_id for c in result.creates],
        "record": [f"{r.instance_id}>{r.server_id}{'*' if r.adopted else ''}" for r in result.records],
        "delete": [f"{d.server_id}:{d.reason}" for d in result.deletes],
        "forget": [f.instance_id for f in result.forgets],
        "wait": [f"{w.server_id}:{w.reason}" for w in result.waits],
        "stuck": [f"{s.instance_id}:{s.reason}" for s in result.stuck],
    }  # fmt: skip
    return {kind: ids for kind, ids in kinds.items() if ids}


@pytest.mark.parametrize(
    ("instances", "servers", "states", "expected"),
    [
        pytest.param([inst()], [], {}, {"create": [I1]}, id="new-instance-gets-a-server"),
        pytest.param([inst()], [srv(status="initializing")], {},
                     {"record": [f"{I1}>1*"]}, id="unrecorded-server-is-adopted-by-label"),
        pytest.param([inst()], [srv(instance=None, name=server_name(I1))], {},
                     {"record": [f"{I1}>1*"]}, id="unrecorded-server-is-adopted-by-name"),
        pytest.param([inst(server="1", status="initializing")], [srv(status="initializing")], {},
                     {}, id="settled-instance-needs-nothing"),
        pytest.param([inst(server="1", status="initializing")], [srv()], {},
                     {"record": [f"{I1}>1"]}, id="status-change-is-recorded"),
        pytest.param([inst(state="running", server="1", status="running")], [], {},
                     {"create": [I1]}, id="vanished-server-is-made-again"),
        pytest.param([inst(state="deleted", server="1", status="running")], [srv()], {},
                     {"delete": ["1:instance-deleted"]}, id="deleted-instance-loses-its-server"),
        pytest.param([inst(state="deleted", server="1", status="running")], [], {},
                     {"forget": [I1]}, id="deleted-instance-whose-server-is-gone-is-forgotten"),
        pytest.param([], [srv(instance="ins_01jzgone")], {"ins_01jzgone": "deleted"},
                     {"delete": ["1:instance-deleted"]}, id="server-of-an-unrecorded-deleted-instance"),
        pytest.param([], [srv(instance="ins_01jznone", age=10)], {},
                     {"wait": ["1:orphan"]}, id="young-orphan-waits"),
        pytest.param([], [srv(instance="ins_01jznone", age=GRACE)], {},
                     {"delete": ["1:orphan"]}, id="orphan-past-grace-is-deleted"),
        pytest.param([], [srv(instance=None, age=GRACE + 1)], {},
                     {"delete": ["1:orphan"]}, id="labelled-server-without-instance-is-an-orphan"),
        pytest.param([], [srv(instance="ins_01jzlive", age=GRACE * 9)], {"ins_01jzlive": "running"},
                     {}, id="server-of-an-instance-living-elsewhere-is-left-alone"),
        pytest.param([], [srv(fleet="flt_someone_else", age=GRACE * 9)], {},
                     {}, id="another-fleets-server-is-never-touched"),
        pytest.param([], [srv(pool=OTHER_POOL, instance="ins_01jznone", age=GRACE * 9)], {},
                     {}, id="another-accounts-pool-is-its-business"),
        pytest.param([], [srv(pool="pool_01jzremoved", instance="ins_01jznone", age=GRACE)], {},
                     {"delete": ["1:orphan"]}, id="server-of-a-removed-pool-is-an-orphan"),
        pytest.param([inst(server="2", status="running", state="running")],
                     [srv("1", age=GRACE), srv("2", name="hand-made")], {},
                     {"delete": ["1:duplicate"]}, id="second-server-past-grace-is-deleted"),
        pytest.param([inst()], [srv("1", age=10), srv("2", name="hand-made", age=20)], {},
                     {"record": [f"{I1}>1*"], "wait": ["2:duplicate"]},
                     id="the-named-server-is-kept-a-young-duplicate-waits"),
        pytest.param([inst(offer=None)], [], {}, {"stuck": [f"{I1}:NoOffer"]},
                     id="instance-without-offer-is-stuck"),
    ],
)  # fmt: skip
def test_the_decider(
    instances: list[InstanceView],
    servers: list[ServerView],
    states: dict[str, str],
    expected: dict[str, list[str]],
) -> None:
    assert summary(plan(instances, servers, states)) == expected


def test_a_created_server_carries_the_name_and_labels() -> None:
    [create] = plan([inst()], []).creates
    assert (create.name, create.offer_id) == ("bcf-ins-01jzaaaa", "cx23")
    assert dict(create.labels) == {LABEL_FLEET: FLEET, LABEL_POOL: POOL, LABEL_INSTANCE: I1}


def test_server_names_are_hostnames() -> None:
    assert server_name("ins_01jz3k4m5n6p7q8r9s0t1v2w3x") == "bcf-ins-01jz3k4m5n6p7q8r9s0t1v2w3x"
