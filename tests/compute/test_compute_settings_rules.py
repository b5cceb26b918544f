"""Every rule of document 004 for saving compute settings, with the document's numbers and words."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from bcfleet.domain.compute_settings import (
    SAVED_MESSAGE,
    ComputeChange,
    ComputeSettings,
    EnvironmentUse,
    IndexUse,
    ServiceUse,
    SizeChange,
    SizeUsers,
    apply_change,
    can_use_size,
    change_towards,
    credits_table,
    default_size_choices,
    draft_change,
    effective_default,
    effective_service_size,
    is_default_locked,
    users_of_size,
)
from bcfleet.domain.retry_after import (
    no_capacity_error,
    retry_after_seconds,
    seconds_until_next_tick,
)
from bcfleet.errors import InvalidInputError, SizeInUseError

NOBODY = SizeUsers()


def settings(
    *, off: tuple[str, ...] = (), spares: dict[str, int] | None = None, default: str | None = None
) -> ComputeSettings:
    result = ComputeSettings(default_size=default)
    for name in off:
        result = result.with_size(name, enabled=False)
    for name, count in (spares or {}).items():
        result = result.with_size(name, spares=count)
    return result


def change(**flags: object) -> ComputeChange:
    return ComputeChange.from_flags(**flags)  # type: ignore[arg-type]


def service(
    name: str = "web",
    *,
    workspace: str = "prod",
    hosting: str = "serverless",
    deployed: bool = True,
    size: str | None = "large",
    environment: str | None = None,
) -> ServiceUse:
    return ServiceUse(f"svc_{name}", workspace, name, hosting, deployed, size, environment)  # type: ignore[arg-type]


def index(
    name: str = "docs",
    *,
    workspace: str = "prod",
    pod_size: str | None = "large",
    deployed: bool = True,
) -> IndexUse:
    return IndexUse(f"idx_{name}", workspace, name, pod_size, deployed)


def environment(name: str = "staging", size: str = "large") -> EnvironmentUse:
    return EnvironmentUse(f"env_{name}", name, size)


# ---------------------------------------------------------------------------
# Defaults


def test_defaults_all_sizes_enabled_no_spares_no_default() -> None:
    s = ComputeSettings()
    assert s.enabled_sizes() == ("small", "medium", "large", "xlarge")
    assert [x.spares for x in s.sizes] == [0, 0, 0, 0]
    assert s.default_size is None
    assert s.serverless_pool is None


def test_until_a_default_is_set_everything_runs_on_medium() -> None:
    assert effective_default(ComputeSettings()) == "medium"
    assert effective_default(settings(default="large")) == "large"


def test_settings_need_every_size_in_order() -> None:
    with pytest.raises(InvalidInputError):
        ComputeSettings(sizes=ComputeSettings().sizes[:3])


def test_stored_spares_above_10_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        ComputeSettings().with_size("small", spares=11)


# ---------------------------------------------------------------------------
# Saving


def test_success_message_is_the_documents() -> None:
    result = apply_change(ComputeSettings(), change(spares={"large": 2}), NOBODY)
    assert result.message == "Your compute settings are saved."
    assert result.message == SAVED_MESSAGE
    assert result.settings.setting("large").spares == 2
    assert result.notices == ()


@pytest.mark.parametrize(
    ("requested", "kept"),
    [
        pytest.param(0, 0, id="zero-keeps-the-size-enabled-with-no-spares"),
        pytest.param(10, 10, id="ten-is-the-maximum"),
    ],
)
def test_spares_0_to_10_are_kept_as_asked(requested: int, kept: int) -> None:
    result = apply_change(ComputeSettings(), change(spares={"small": requested}), NOBODY)
    assert result.settings.setting("small").spares == kept
    assert result.settings.is_enabled("small")
    assert result.notices == ()


def test_more_than_10_spares_are_kept_as_10_and_the_answer_says_so() -> None:
    result = apply_change(ComputeSettings(), change(spares={"large": 25}), NOBODY)
    assert result.settings.setting("large").spares == 10
    assert result.message == "Your compute settings are saved."
    (notice,) = result.notices
    assert notice.code == "SPARES_CAPPED"
    assert notice.size == "large"
    assert "Maximum is 10 spare instances per size" in notice.message
    assert "25" in notice.message and "we keep 10 instances ready" in notice.message


def test_negative_spares_are_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as caught:
        apply_change(ComputeSettings(), change(spares={"large": -1}), NOBODY)
    assert caught.value.details["field"] == "spares"


def test_unknown_size_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="small, medium, large, xlarge"):
        apply_change(ComputeSettings(), ComputeChange({"huge": SizeChange(enabled=True)}), NOBODY)


def test_enable_and_disable_of_one_size_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="Large"):
        change(enable=["large"], disable=["large"])


def test_default_and_clear_default_at_once_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        apply_change(ComputeSettings(), change(default_size="large", clear_default=True), NOBODY)


def test_serverless_pool_is_kept_unless_given() -> None:
    first = apply_change(ComputeSettings(), change(serverless_pool="pool_a"), NOBODY).settings
    assert first.serverless_pool == "pool_a"
    again = apply_change(first, change(spares={"small": 1}), NOBODY).settings
    assert again.serverless_pool == "pool_a"


# ---------------------------------------------------------------------------
# Default size


def test_only_enabled_sizes_appear_in_the_default_size_list() -> None:
    choices = default_size_choices(settings(off=("small", "xlarge")))
    assert choices == (
        ("medium", "Medium (1 vCPU, 4 GiB memory)"),
        ("large", "Large (2 vCPU, 8 GiB memory)"),
    )


def test_choose_an_enabled_default() -> None:
    result = apply_change(ComputeSettings(), change(default_size="large"), NOBODY)
    assert result.settings.default_size == "large"
    assert effective_default(result.settings) == "large"


def test_only_an_enabled_size_can_be_default() -> None:
    with pytest.raises(InvalidInputError, match="Only enabled sizes can be the default size"):
        apply_change(settings(off=("xlarge",)), change(default_size="xlarge"), NOBODY)


def test_enabling_a_size_and_making_it_default_in_one_save() -> None:
    result = apply_change(
        settings(off=("xlarge",)), change(enable=["xlarge"], default_size="xlarge"), NOBODY
    )
    assert result.settings.default_size == "xlarge"


def test_the_default_sizes_enabled_switch_is_locked() -> None:
    current = settings(default="large")
    assert is_default_locked(current, "large")
    assert not is_default_locked(current, "medium")
    with pytest.raises(InvalidInputError) as caught:
        apply_change(current, change(disable=["large"]), NOBODY)
    assert "The Enabled switch for the default size Large is locked" in caught.value.message
    assert "first choose a different default size" in caught.value.message


def test_choosing_another_default_unlocks_the_old_one() -> None:
    result = apply_change(
        settings(default="large"), change(default_size="small", disable=["large"]), NOBODY
    )
    assert result.settings.default_size == "small"
    assert not result.settings.is_enabled("large")


def test_clearing_the_default_returns_to_medium() -> None:
    result = apply_change(settings(default="large"), change(clear_default=True), NOBODY)
    assert result.settings.default_size is None
    assert effective_default(result.settings) == "medium"


def test_medium_off_without_a_default_asks_for_one_and_cannot_be_saved() -> None:
    with pytest.raises(InvalidInputError) as caught:
        apply_change(ComputeSettings(), change(disable=["medium"]), NOBODY)
    assert caught.value.details["field"] == "defaultSize"
    assert "choose a default size" in caught.value.message


def test_medium_off_with_a_default_chosen_in_the_same_save() -> None:
    result = apply_change(
        ComputeSettings(), change(disable=["medium"], default_size="small"), NOBODY
    )
    assert not result.settings.is_enabled("medium")
    assert effective_default(result.settings) == "small"


def test_medium_off_is_fine_while_another_default_is_set() -> None:
    result = apply_change(settings(default="large"), change(disable=["medium"]), NOBODY)
    assert not result.settings.is_enabled("medium")


def test_clearing_the_default_while_medium_is_off_cannot_be_saved() -> None:
    current = settings(off=("medium",), default="large")
    with pytest.raises(InvalidInputError, match="choose a default size"):
        apply_change(current, change(clear_default=True), NOBODY)


# ---------------------------------------------------------------------------
# Turning off a size that's in use


@pytest.mark.parametrize(
    ("users", "blocks"),
    [
        pytest.param(
            SizeUsers(services=(service(),)), True, id="deployed-serverless-service-blocks"
        ),
        pytest.param(
            SizeUsers(services=(service(deployed=False),)), False, id="undeployed-service-does-not"
        ),
        pytest.param(
            SizeUsers(services=(service(hosting="managed"),)), False, id="managed-service-does-not"
        ),
        pytest.param(
            SizeUsers(services=(service(size=None),)),
            True,
            id="legacy-service-without-size-is-large",
        ),
        pytest.param(SizeUsers(indexes=(index(),)), True, id="deployed-index-with-pod-size-blocks"),
        pytest.param(
            SizeUsers(indexes=(index(deployed=False),)), True, id="undeployed-index-still-blocks"
        ),
        pytest.param(
            SizeUsers(indexes=(index(pod_size=None),)),
            False,
            id="index-without-pod-size-never-blocks",
        ),
        pytest.param(SizeUsers(environments=(environment(),)), True, id="empty-environment-blocks"),
        pytest.param(
            SizeUsers(
                services=(service(size="small", environment="env_staging"),),
                environments=(environment(size="small"),),
            ),
            False,
            id="service-in-environment-runs-on-environment-size",
        ),
        pytest.param(
            SizeUsers(services=(service(size="small"),), indexes=(index(pod_size="xlarge"),)),
            False,
            id="users-of-other-sizes-do-not-block",
        ),
    ],
)
def test_turning_large_off(users: SizeUsers, blocks: bool) -> None:
    current = ComputeSettings()
    if blocks:
        with pytest.raises(SizeInUseError):
            apply_change(current, change(disable=["large"]), users)
    else:
        result = apply_change(current, change(disable=["large"]), users)
        assert not result.settings.is_enabled("large")
        assert result.message == "Your compute settings are saved."


def test_the_error_names_each_user_with_its_workspace() -> None:
    users = SizeUsers(
        services=(service("web"), service("api", hosting="managed")),
        indexes=(index("docs"), index("faq", pod_size=None)),
        environments=(environment("staging"), environment("dev", size="small")),
    )
    with pytest.raises(SizeInUseError) as caught:
        apply_change(ComputeSettings(), change(disable=["large"]), users)
    error = caught.value
    assert error.code == "SIZE_IN_USE"
    assert error.message == (
        "Size Large is in use: service web (workspace prod), environment staging, "
        "index docs (workspace prod)"
    )
    (entry,) = error.details["sizes"]
    assert entry["size"] == "large" and entry["label"] == "Large"
    assert entry["users"] == [
        {"kind": "service", "id": "svc_web", "name": "web", "workspace": "prod"},
        {"kind": "environment", "id": "env_staging", "name": "staging"},
        {"kind": "index", "id": "idx_docs", "name": "docs", "workspace": "prod"},
    ]


def test_a_service_in_an_environment_is_listed_with_the_environment() -> None:
    users = SizeUsers(
        services=(service("web", size="small", environment="env_staging"),),
        environments=(environment("staging", size="large"),),
    )
    holders = users_of_size("large", users)
    assert [h.describe() for h in holders] == [
        "service web (workspace prod)",
        "environment staging",
    ]
    assert users_of_size("small", users) == ()


def test_effective_service_size() -> None:
    envs = (environment("staging", size="xlarge"),)
    assert (
        effective_service_size(service(size="small", environment="env_staging"), envs) == "xlarge"
    )
    assert effective_service_size(service(size="small"), envs) == "small"
    assert effective_service_size(service(size=None), envs) == "large"
    assert effective_service_size(service(size="small", environment="env_gone"), envs) == "small"


def test_every_blocked_size_is_named() -> None:
    users = SizeUsers(services=(service("web", size="small"),), environments=(environment("qa"),))
    with pytest.raises(SizeInUseError) as caught:
        apply_change(ComputeSettings(), change(disable=["small", "large"]), users)
    assert caught.value.message == (
        "Size Small is in use: service web (workspace prod); Size Large is in use: environment qa"
    )
    assert [e["size"] for e in caught.value.details["sizes"]] == ["small", "large"]


def test_undeploying_the_service_frees_the_size() -> None:
    blocked = SizeUsers(services=(service("web"),))
    with pytest.raises(SizeInUseError, match="service web \\(workspace prod\\)"):
        apply_change(ComputeSettings(), change(disable=["large"]), blocked)
    freed = SizeUsers(services=(service("web", deployed=False),))
    result = apply_change(ComputeSettings(), change(disable=["large"]), freed)
    assert result.message == "Your compute settings are saved."


def test_a_size_that_was_already_off_never_blocks() -> None:
    current = settings(off=("large",))
    users = SizeUsers(services=(service(),), environments=(environment(),), indexes=(index(),))
    result = apply_change(current, change(disable=["large"], spares={"small": 1}), users)
    assert result.settings.setting("small").spares == 1
    assert not result.settings.is_enabled("large")


def test_a_failed_save_leaves_settings_unchanged() -> None:
    current = settings(spares={"large": 2})
    with pytest.raises(SizeInUseError):
        apply_change(
            current,
            change(disable=["large"], spares={"small": 3}),
            SizeUsers(services=(service(),)),
        )
    assert current == settings(spares={"large": 2})


def test_a_disabled_size_stays_available_to_what_already_uses_it() -> None:
    s = settings(off=("large",))
    assert not can_use_size(s, "large")
    assert can_use_size(s, "large", current="large")
    assert can_use_size(s, "medium")


# ---------------------------------------------------------------------------
# Credits


def test_credits_table_two_spares_show_1_440() -> None:
    table = credits_table(settings(spares={"large": 2}))
    by_size = {row.size: row for row in table.rows}
    assert by_size["large"].credits_per_month == 1440
    assert by_size["small"].credits_per_month == 0
    assert table.total == 1440


def test_total_is_over_enabled_sizes_only() -> None:
    table = credits_table(settings(off=("xlarge",), spares={"small": 1, "medium": 2, "xlarge": 4}))
    assert [r.credits_per_month for r in table.rows] == [720, 1440, 0, 2880]
    assert table.total == 2160
    assert table.to_json()["totalCreditsPerMonth"] == 2160
    assert table.to_json()["sizes"]["xlarge"] == {  # type: ignore[index]
        "enabled": False,
        "spares": 4,
        "creditsPerMonth": 2880,
    }


def test_credits_update_while_editing_before_saving() -> None:
    current = settings(spares={"large": 1})
    draft = draft_change(current, change(spares={"large": 3, "small": 40}))
    assert credits_table(draft.settings).total == (3 + 10) * 720
    assert [n.size for n in draft.notices] == ["small"]
    assert credits_table(current).total == 720


def test_draft_does_not_apply_the_save_rules() -> None:
    draft = draft_change(ComputeSettings(), change(disable=["medium"]))
    assert not draft.settings.is_enabled("medium")


# ---------------------------------------------------------------------------
# Whole-state changes (a submitted form, a FleetConfig section)


def test_change_towards_a_desired_state() -> None:
    current = settings(spares={"medium": 1}, default="large")
    desired = settings(off=("xlarge",), spares={"medium": 1, "large": 2}, default=None)
    diff = change_towards(current, desired)
    assert dict(diff.sizes) == {
        "large": SizeChange(spares=2),
        "xlarge": SizeChange(enabled=False),
    }
    assert diff.clear_default
    assert apply_change(current, diff, NOBODY).settings == desired


def test_change_towards_the_same_state_is_empty() -> None:
    current = settings(spares={"medium": 1}, default="large")
    diff = change_towards(current, current)
    assert dict(diff.sizes) == {}
    assert diff.default_size is None and not diff.clear_default


# ---------------------------------------------------------------------------
# No free instance: NO_CAPACITY and Retry-After


def test_retry_after_is_about_boot_plus_time_to_next_spares_tick() -> None:
    for seed in range(50):
        seconds = retry_after_seconds(
            boot_seconds=20, seconds_to_next_tick=10, rng=random.Random(seed)
        )
        assert 30 <= seconds <= 36


def test_retry_after_is_jittered_by_the_injected_random() -> None:
    values = {
        retry_after_seconds(boot_seconds=20, seconds_to_next_tick=10, rng=random.Random(seed))
        for seed in range(50)
    }
    assert len(values) > 1
    same = [
        retry_after_seconds(boot_seconds=20, seconds_to_next_tick=10, rng=random.Random(7))
        for _ in range(2)
    ]
    assert same[0] == same[1]


@pytest.mark.parametrize(
    ("boot", "tick"),
    [
        pytest.param(0, 0, id="instant-boot-tick-due-is-still-1"),
        pytest.param(0.2, 0, id="fractions-round-up"),
        pytest.param(20, 30, id="a-whole-tick-away"),
    ],
)
def test_retry_after_is_always_a_positive_int(boot: float, tick: float) -> None:
    seconds = retry_after_seconds(
        boot_seconds=boot, seconds_to_next_tick=tick, rng=random.Random(1)
    )
    assert isinstance(seconds, int)
    assert seconds >= max(1, boot + tick)


def test_retry_after_without_jitter_is_the_ready_time_rounded_up() -> None:
    rng = random.Random(3)
    assert retry_after_seconds(boot_seconds=20, seconds_to_next_tick=4.5, rng=rng, jitter=0) == 25


def test_seconds_until_next_tick() -> None:
    now = datetime(2025, 6, 2, 10, 0, 20, tzinfo=UTC)
    last = datetime(2025, 6, 2, 10, 0, 0, tzinfo=UTC)
    assert seconds_until_next_tick(now, last, 30) == 10
    assert seconds_until_next_tick(now, last, 15) == 0
    assert seconds_until_next_tick(now, None, 30) == 0


def test_no_capacity_error_names_the_size_and_who_can_add_capacity() -> None:
    error = no_capacity_error("large", 27)
    assert error.code == "NO_CAPACITY"
    assert error.http_status == 503
    assert error.details["reason"] == "fleet_no_capacity"
    assert error.details["instance_size"] == "large"
    assert error.retry_after_seconds == 27
    assert "Large" in error.message
    assert "ask your admin to add capacity" in error.message
