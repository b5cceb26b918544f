"""`fleet demo`: a simulated fleet in a fresh database, for trying bcfleet out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.api.demo import build_demo, fleet_contents
from bcfleet.cli.common import CliState, Whole, common_options, output, state, table
from bcfleet.cli.demo_workloads import populate
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.fleet import Fleet


def _workloads(fleet: Fleet) -> dict[str, int]:
    """Capacity rows for the reported hosts, what runs on them (instances, reservations, …),
    and the standard meters (`fleet iam setup --meters`), so usage bills once the jobs run."""
    fleet.api.jobs.call(LOCAL_OPERATOR, "vps.hosts")
    pools = {p["name"]: p["id"] for p in fleet.api.pools.list(LOCAL_OPERATOR)["items"]}
    made = populate(fleet, pools["vps-fra"], pools["vps-ams"])
    fleet.api.usage.setup_meters(LOCAL_OPERATOR)
    return made


@click.command("demo")
@common_options
@click.option("--hosts", type=Whole(1, 10000), default=50, show_default=True)
@click.option(
    "--reset",
    is_flag=True,
    help="Replace the fleet an SQLite file already holds (without it, such a file is left alone).",
)
@click.option(
    "--no-tui", is_flag=True, help="Build and print the fleet; do not open the dashboard."
)
@click.option("--read-only", is_flag=True, help="Open the dashboard without state changes.")
def group(hosts: int, reset: bool, no_tui: bool, read_only: bool) -> None:
    """Create a simulated fleet and open the dashboard on it (--no-tui prints it instead).

    The fleet is built only in an empty database: one that holds tenants, pools, hosts or
    instances is left as it was (exit 1, saying what it holds) unless --reset is given, which
    replaces an SQLite file. Without a terminal on stdout (a pipe, a script) or with --json it
    prints, as --no-tui does.
    """
    s = state()
    _make_room(s, reset)
    summary = build_demo(s.fleet, hosts=hosts)
    summary.update(_workloads(s.fleet))
    if not (no_tui or s.json or not sys.stdout.isatty()):
        from bcfleet.cli.demo_background import background
        from bcfleet.cli.tui import run_dashboard

        with background(s.fleet):  # the jobs and a simulated agent keep the fleet moving
            run_dashboard(read_only=read_only, refresh=2.0, tenant=None)
        return
    hosts_page = s.fleet.api.hosts.list(s.credential)
    pools_page = s.fleet.api.pools.list(s.credential)
    output(
        {"summary": summary, "pools": pools_page["items"], "hosts": hosts_page["items"]},
        lambda d: "\n\n".join(
            [
                table(
                    d["pools"],
                    [
                        ("POOL", "name"),
                        ("KIND", "kind"),
                        ("GPU", "gpuModel"),
                        ("OFFERED TO", "offeredTo"),
                    ],
                ),
                table(d["hosts"], [("HOST", "name"), ("POOL", "pool"), ("STATE", "status")]),
                f"Demo fleet in {s.db}: {len(d['hosts'])} hosts in {len(d['pools'])} pools.",
            ]
        ),
    )


def _describe(found: dict[str, int]) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in found.items())


def _make_room(s: CliState, reset: bool) -> None:
    """Leave a database that holds a fleet alone, or (with --reset) remove its SQLite file."""
    db = s.db or "fleet.db"
    sqlite_path = None
    if "://" not in db or db.startswith("sqlite:///"):
        sqlite_path = Path(db.removeprefix("sqlite:///"))
        s.db = f"sqlite:///{sqlite_path}"
        if Fleet.probe(s.db)[0] == "missing":  # INVALID_INPUT for a path no file can have
            return
    found = fleet_contents(s.fleet)
    if not found:
        return
    where = str(sqlite_path) if sqlite_path is not None else "the database"
    if not reset:
        raise ConflictError(
            f"{where} holds a fleet ({_describe(found)}); `fleet demo --reset` replaces it,"
            " `fleet tui` opens it as it is",
            {"found": found},
        )
    if sqlite_path is None:
        raise InvalidInputError(
            f"{where} holds a fleet ({_describe(found)}); --reset removes an SQLite file only:"
            " empty a PostgreSQL database yourself",
            {"found": found},
        )
    s.close_fleet()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
    click.echo(f"Replaced the fleet in {sqlite_path} ({_describe(found)}).", err=True)
