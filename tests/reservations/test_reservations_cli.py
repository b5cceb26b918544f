"""`fleet reservations …` and `fleet capacity preview` as a user types them: text that explains, JSON that parses."""

from __future__ import annotations

from typing import Any

from bcfleet.clock import FakeClock
from tests.support.fleet import T0, open_fleet
from tests.support.reservations import gpu_pool


def setup(sqlite_url: str) -> str:
    fleet = open_fleet(sqlite_url, FakeClock(T0))
    pool = gpu_pool(fleet)
    fleet.close()
    return str(pool["name"])


def test_create_get_list_cancel(cli: Any, sqlite_url: str) -> None:
    pool = setup(sqlite_url)
    spot = cli("reservations", "create", "--tenant", "beta", "--pool", pool, "--gpus", "4",
               "--duration", "12h", "--spot", "--idempotency-key", "sweep-042", "--json")  # fmt: skip
    assert spot.exit_code == 0, spot.stderr
    victim = spot.json()
    made = cli("reservations", "create", "--tenant", "acme", "--pool", pool, "--gpus", "4",
               "--duration", "12h")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    assert "state:    placed" in made.stdout
    assert "during:   2026-11-30T10:02:00Z → 2026-11-30T22:02:00Z" in made.stdout
    shown = cli("reservations", "get", victim["id"])
    assert "Preempted: SpotPreempted: preempted by a non-spot reservation" in shown.stdout
    assert "until the deadline 2026-11-30T10:02:00Z" in shown.stdout
    listed = cli("reservations", "list", "--tenant", "beta")
    assert victim["id"] in listed.stdout and "spot" in listed.stdout
    cancelled = cli("reservations", "cancel", victim["id"], "--json")
    assert cancelled.json()["releaseReason"] == "cancelled"  # type: ignore[index]


def test_pending_text_says_why_and_when_it_retries(cli: Any, sqlite_url: str) -> None:
    pool = setup(sqlite_url)
    cli(
        "reservations",
        "create",
        "--tenant",
        "acme",
        "--pool",
        pool,
        "--gpus",
        "4",
        "--duration",
        "1h",
    )
    second = cli("reservations", "create", "--tenant", "acme", "--pool", pool, "--gpus", "4",
                 "--duration", "1h", "--spot")  # fmt: skip
    assert "state:    pending" in second.stdout
    assert (
        "Unschedulable: NoNodeFits: no node fits (1 node): 1 × fits: 0 of 4 gpu free; retried every 30 s"
        in second.stdout
    )


def test_spot_node_lease_is_invalid_input(cli: Any, sqlite_url: str) -> None:
    pool = setup(sqlite_url)
    result = cli("reservations", "create", "--tenant", "acme", "--pool", pool, "--gpus", "4",
                 "--duration", "1h", "--spot", "--binding", "node", "--json")  # fmt: skip
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "INVALID_INPUT"  # type: ignore[index]


def test_capacity_preview(cli: Any, sqlite_url: str) -> None:
    pool = setup(sqlite_url)
    cli(
        "reservations",
        "create",
        "--tenant",
        "beta",
        "--pool",
        pool,
        "--gpus",
        "4",
        "--duration",
        "12h",
        "--spot",
    )
    preview = cli("capacity", "preview", "--tenant", "acme", "--pool", pool, "--gpus", "4",
                  "--duration", "12h", "--json")  # fmt: skip
    body = preview.json()
    assert body["preemptible"] == {"reservations": 1, "startsAt": 1796032920000}  # type: ignore[index]
    text = cli(
        "capacity",
        "preview",
        "--tenant",
        "acme",
        "--pool",
        pool,
        "--gpus",
        "4",
        "--duration",
        "12h",
    )
    assert "does not fit now: no node fits (1 node): 1 × fits: 0 of 4 gpu free" in text.stdout
    assert (
        "would fit by preempting 1 spot reservation, starting 2026-11-30T10:02:00Z" in text.stdout
    )
    spot = cli("capacity", "preview", "--tenant", "acme", "--pool", pool, "--gpus", "4",
               "--duration", "12h", "--spot", "--json")  # fmt: skip
    assert "preemptible" not in spot.json()  # type: ignore[operator]
