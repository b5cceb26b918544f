"""Document 004 at the terminal: `fleet settings compute`, `services`, `indexes`, `environments`, as a user types them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from tests.support.builders import OP, token
from tests.support.compute import legacy_service, make_spares_ready, serverless_tenant
from tests.support.fleet import T0, open_fleet


@pytest.fixture
def world(sqlite_url: str) -> Iterator[tuple[Fleet, FakeClock]]:
    """The same database the `cli` fixture uses, set up through the Python API: acme with a serverless pool."""
    clock = FakeClock(T0)
    fleet = open_fleet(sqlite_url, clock)
    serverless_tenant(fleet)
    yield fleet, clock
    fleet.close()


def ok(result: Any) -> Any:
    assert result.exit_code == 0, result.stderr
    return result


def spares(fleet: Fleet, clock: FakeClock, **counts: int) -> None:
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares=counts)
    make_spares_ready(fleet, clock)


def create_service(cli: Any, name: str = "web", *extra: str) -> str:
    made = ok(
        cli(
            "services",
            "create",
            "--tenant",
            "acme",
            "--workspace",
            "prod",
            "--name",
            name,
            *extra,
            "--json",
        )  # fmt: skip
    )
    return str(made.json()["id"])


# -- settings compute ----------------------------------------------------------------------


def test_show_lists_sizes_with_shapes_credits_and_the_default(cli: Any, world: Any) -> None:
    out = ok(cli("settings", "compute", "show", "--tenant", "acme")).stdout
    lines = out.splitlines()
    assert lines[0] == "Compute settings of acme (version 1)"
    assert lines[1].split() == [
        "SIZE", "SERVICES", "INDEXES", "ENABLED", "SPARES", "CREDITS/MONTH", "IN", "USE", "BY",
    ]  # fmt: skip
    assert lines[2].split("  ")[0] == "Small"
    assert "1 vCPU, 2 GiB memory" in lines[2] and "0.4+ vCPU, 4 GiB memory" in lines[2]
    assert lines[5].startswith("Extra large") and "4 vCPU, 16 GiB memory" in lines[5]
    assert "Total credits per month: 0" in lines
    assert "Default size: Medium (1 vCPU, 4 GiB memory) (none chosen)" in lines
    assert "Serverless pool: vps-fra" in lines


def test_set_saves_and_prints_credits_with_thousands_separators(cli: Any, world: Any) -> None:
    out = ok(cli("settings", "compute", "set", "--tenant", "acme", "--spares", "large=2")).stdout
    assert out.splitlines()[0] == "Your compute settings are saved."
    large = next(line for line in out.splitlines() if line.startswith("Large"))
    assert large.split()[-2:] == ["2", "1,440"]
    assert "Total credits per month: 1,440" in out


def test_more_than_ten_spares_prints_the_notice(cli: Any, world: Any) -> None:
    out = ok(cli("settings", "compute", "set", "--tenant", "acme", "--spares", "medium=15")).stdout
    assert (
        "notice: Maximum is 10 spare instances per size: you entered 15 for Medium, "
        "so we keep 10 instances ready." in out
    )
    assert "Total credits per month: 7,200" in out


def test_set_json_is_one_document(cli: Any, world: Any) -> None:
    body = ok(
        cli(
            "settings",
            "compute",
            "set",
            "--tenant",
            "acme",
            "--enable",
            "xlarge",
            "--disable",
            "small",
            "--default",
            "large",
            "--json",
        )  # fmt: skip
    ).json()
    assert body["message"] == "Your compute settings are saved."
    assert (body["defaultSize"], body["sizes"]["small"]["enabled"]) == ("large", False)
    cleared = ok(
        cli("settings", "compute", "set", "--tenant", "acme", "--clear-default", "--json")
    ).json()
    assert cleared["effectiveDefaultSize"] == "medium"


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(["--spares", "large"], id="spares-without-count"),
        pytest.param(["--spares", "large=two"], id="spares-not-a-number"),
        pytest.param(["--default", "large", "--clear-default"], id="default-and-clear"),
    ],
)
def test_usage_errors_exit_64(cli: Any, world: Any, flags: list[str]) -> None:
    assert cli("settings", "compute", "set", "--tenant", "acme", *flags).exit_code == 64


def test_bad_values_are_invalid_input(cli: Any, world: Any) -> None:
    result = cli("settings", "compute", "set", "--tenant", "acme", "--spares", "large=-1", "--json")
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "INVALID_INPUT"


def test_size_in_use_names_the_service_and_its_workspace(cli: Any, world: Any) -> None:
    fleet, clock = world
    spares(fleet, clock, large=1)
    web = create_service(cli, "web", "--size", "large")
    ok(cli("services", "deploy", web))
    human = cli("settings", "compute", "set", "--tenant", "acme", "--disable", "large")
    assert human.exit_code == 1
    assert "error: SIZE_IN_USE: Size Large is in use: service web (workspace prod)" in human.stderr
    as_json = cli("settings", "compute", "set", "--tenant", "acme", "--disable", "large", "--json")
    error = as_json.json()["error"]
    assert error["code"] == "SIZE_IN_USE"
    assert error["details"]["sizes"][0]["users"][0]["workspace"] == "prod"
    ok(cli("services", "undeploy", web))
    assert (
        "Your compute settings are saved."
        in ok(cli("settings", "compute", "set", "--tenant", "acme", "--disable", "large")).stdout
    )


def test_members_may_not_view_the_compute_tab(cli: Any, world: Any) -> None:
    fleet, _ = world
    member = token(fleet, "acme", "mia", "member")
    result = cli("settings", "compute", "show", "--tenant", "acme", "--token", member, "--json")
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "FORBIDDEN"


# -- services ------------------------------------------------------------------------------


def test_a_service_without_a_size_is_medium(cli: Any, world: Any) -> None:
    out = ok(
        cli("services", "create", "--tenant", "acme", "--workspace", "prod", "--name", "web")
    ).stdout
    assert out.endswith(
        "in workspace prod: Medium (1 vCPU, 4 GiB memory), serverless, undeployed\n"
    )


def test_deploy_takes_a_spare_and_prints_it(cli: Any, world: Any) -> None:
    fleet, clock = world
    spares(fleet, clock, large=1)
    web = create_service(cli, "web", "--size", "large")
    out = ok(cli("services", "deploy", web)).stdout
    assert out.startswith("Service web deployed on Large (2 vCPU, 8 GiB memory): instance ins_")
    assert out.endswith(" ready.\n")
    listed = ok(cli("services", "list", "--tenant", "acme")).stdout.splitlines()
    assert listed[1].split()[-1] == "deployed"


def test_no_free_instance_is_no_capacity_with_the_size_and_retry_after(
    cli: Any, world: Any
) -> None:
    fleet, clock = world
    spares(fleet, clock, large=1)
    first, second = (
        create_service(cli, "a", "--size", "large"),
        create_service(cli, "b", "--size", "large"),
    )
    ok(cli("services", "deploy", first))
    result = cli("services", "deploy", second, "--json")
    assert result.exit_code == 1
    error = result.json()["error"]
    assert error["code"] == "NO_CAPACITY"
    assert error["details"]["reason"] == "fleet_no_capacity"
    assert error["details"]["instance_size"] == "large"
    assert error["details"]["retry_after"] > 0
    human = cli("services", "deploy", second)
    assert "error: NO_CAPACITY: No free instance of size Large. Retry after" in human.stderr


def test_deploy_wait_starts_an_instance_and_prints_progress(cli: Any, world: Any) -> None:
    web = create_service(cli, "web", "--size", "xlarge")
    result = cli("services", "deploy", web, "--wait", "--poll", "5", "--timeout", "10")
    lines = result.stdout.splitlines()
    assert lines[0] == "No free instance of size Extra large: starting one; keep this run open."
    assert lines[1].startswith(
        "Starting an instance of Extra large (4 vCPU, 16 GiB memory) for web (ins_"
    )
    assert lines[2:] == [
        f"  waiting for instance {lines[1].split('(')[-1].rstrip(')…')}: starting ({s} s)"
        for s in (5, 10)
    ]
    assert (
        result.exit_code == 1
    )  # nobody booted it here: the run gave up, the instance keeps starting
    assert "keeps starting" in result.stderr
    assert "starting" in ok(cli("services", "show", web)).stdout


def test_deploy_wait_with_a_free_spare_deploys_at_once(cli: Any, world: Any) -> None:
    fleet, clock = world
    spares(fleet, clock, medium=1)
    web = create_service(cli, "web")
    out = ok(cli("services", "deploy", web, "--wait")).stdout
    assert out.startswith("Service web deployed on Medium (1 vCPU, 4 GiB memory): instance ins_")


def test_moving_an_old_service_to_medium_warns_about_memory(cli: Any, world: Any) -> None:
    fleet, _ = world
    old = legacy_service(fleet, "acme", "prod", "old", deployed=False)
    assert "(deployed before sizes existed)" in ok(cli("services", "show", old)).stdout
    out = ok(cli("services", "move", old, "--size", "medium")).stdout
    assert out.splitlines() == [
        "Service old runs on Medium (1 vCPU, 4 GiB memory).",
        "notice: Services deployed before instance sizes existed ran with 8 GiB memory; "
        "on Medium its memory drops to 4 GiB. Choose Large to keep 8 GiB.",
    ]


def test_delete_a_service(cli: Any, world: Any) -> None:
    web = create_service(cli)
    assert ok(cli("services", "delete", web)).stdout == f"Service {web} deleted.\n"
    assert cli("services", "show", web).exit_code == 1


# -- indexes and environments --------------------------------------------------------------


def test_indexes_pod_size_and_reset_to_the_default(cli: Any, world: Any) -> None:
    made = ok(
        cli(
            "indexes",
            "create",
            "--tenant",
            "acme",
            "--workspace",
            "search",
            "--name",
            "docs",
            "--pod-size",
            "large",
            "--json",
        )  # fmt: skip
    ).json()
    shown = ok(cli("indexes", "show", made["id"])).stdout
    assert shown.endswith(": Large (1.7+ vCPU, 16 GiB memory), undeployed\n")
    ok(cli("indexes", "deploy", made["id"]))
    ok(cli("indexes", "undeploy", made["id"]))
    refused = cli("settings", "compute", "set", "--tenant", "acme", "--disable", "large")
    assert "index docs (workspace search)" in refused.stderr  # undeploying does not free it
    reset = ok(cli("indexes", "update", made["id"], "--default-pod-size")).stdout
    assert reset.endswith(": Default pod size, undeployed\n")
    listed = ok(cli("indexes", "list", "--tenant", "acme")).stdout.splitlines()
    assert listed[0].split() == ["ID", "WORKSPACE", "NAME", "POD", "SIZE", "DEPLOYED"]
    assert ok(cli("settings", "compute", "set", "--tenant", "acme", "--disable", "large"))


def test_environments_create_list_update(cli: Any, world: Any) -> None:
    made = ok(
        cli(
            "environments",
            "create",
            "--tenant",
            "acme",
            "--name",
            "staging",
            "--size",
            "small",
            "--json",
        )  # fmt: skip
    ).json()
    create_service(cli, "web", "--environment", "staging")
    out = ok(cli("environments", "update", made["id"], "--size", "medium")).stdout
    assert out == f"Environment staging ({made['id']}): Medium (1 vCPU, 4 GiB memory), 1 service\n"
    listed = ok(cli("environments", "list", "--tenant", "acme")).stdout.splitlines()
    assert listed[1].split()[1:] == ["staging", "Medium", "(1", "vCPU,", "4", "GiB", "memory)", "1"]
    refused = cli("settings", "compute", "set", "--tenant", "acme", "--disable", "medium",
                  "--default", "small")  # fmt: skip
    assert "environment staging" in refused.stderr
