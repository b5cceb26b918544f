"""The hostile CLI walk's parts: a small seeded fleet, click's command tree, valid defaults.

tests/cli/test_cli_hostile_walk.py runs every command of `fleet` with one hostile value at a
time; this module says which commands there are (walking click's tree), what a valid value
of each option is in the seeded fleet, and how to put the fleet back after a run changed it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from sqlalchemy import create_engine, text
from sqlmodel import SQLModel

from bcfleet.cli.main import cli
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.jobs.webhooks import enqueue
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.fleet import PG_ADMIN_URL, T0, create_test_database, open_fleet

COMMON = ("db_opt", "json_opt", "token_opt", "debug_opt")
"""The options every command shares (cli/common.py); walked on their own."""

SKIPPED = {
    "serve": "the HTTP server runs until stopped",
    "jobs run": "the scheduler daemon runs until stopped",
    "tui": "the dashboard needs a terminal and runs until quit",
    "agent run": "the host agent polls a server until stopped",
    "provider-fake": "the fake provider server runs until stopped",
    "events watch": "follows the event log until stopped",
}
"""Long-running servers, daemons and dashboards, with why each is not walked."""

EXTRA: dict[str, tuple[str, ...]] = {
    "demo": ("--no-tui",),  # without it the dashboard opens
    "agent simulate": ("--once",),  # without it the simulated agent runs until stopped
    "apply": ("--yes",),  # without it apply asks on the terminal
    "provider-accounts create": ("--token-env", "HCLOUD_TOKEN"),  # one token source is needed
    "iam setup": ("--meters",),  # without it there is nothing to set up
    "services deploy": ("--wait",),  # so that --poll and --timeout are used
}
"""Options given on every run of a command besides its required ones, and why."""

READ_VERBS = frozenset(
    {"list", "show", "get", "spec", "preview", "inventory", "validate", "plan", "doctor",
     "deliveries", "dead-letters", "export", "offers"}
)  # fmt: skip
"""Verbs that never change the fleet: a run of another verb that succeeded restores it."""

CHANGES_ON_ERROR = frozenset({"services deploy"})
"""Commands that change the fleet even when they fail (a deploy that times out keeps its
instance starting): every run of them restores it."""


@dataclass(frozen=True)
class Param:
    """One option or argument of a command: its flag (or argument name) and click type."""

    name: str
    positional: bool
    required: bool
    kind: str  # "number", "choice", "path", "text"


@dataclass(frozen=True)
class Command:
    path: str  # "flavors create"
    params: tuple[Param, ...]


def _kind(param: click.Parameter) -> str:
    if isinstance(param.type, click.types._NumberParamTypeBase):
        return "number"
    if isinstance(param.type, click.Choice):
        return "choice"
    if isinstance(param.type, click.Path | click.File):
        return "path"
    return "text"


def _param(param: click.Parameter) -> Param:
    positional = isinstance(param, click.Argument)
    name = param.name or "" if positional else max(param.opts, key=len)
    return Param(name, positional, param.required, _kind(param))


def _walk(command: click.Command, path: list[str], ctx: click.Context) -> Iterator[Command]:
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join([*path, name])} is listed but not found"
            yield from _walk(sub, [*path, name], ctx)
        return
    params = tuple(
        _param(p)
        for p in command.params
        if p.name not in COMMON and not (isinstance(p, click.Option) and p.is_flag)
    )
    yield Command(" ".join(path), params)


def command_tree() -> list[Command]:
    """Every leaf command of `fleet`, found by walking click's groups (the root is lazy)."""
    return list(_walk(cli, [], click.Context(cli)))


# ---------------------------------------------------------------------------
# The seeded fleet


@dataclass
class World:
    """The seeded fleet's database, its objects' ids and the files valid options point at."""

    url: str
    engine: str
    files: Path
    ids: dict[str, str] = field(default_factory=dict)
    restore: Any = None  # () -> None: put the seeded fleet back

    def path(self, name: str) -> str:
        return str(self.files / name)


FLEETCONFIG = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - { id: root }
  - { id: walkers }
pools:
  - { name: walk-pool, kind: vps-host, owner: root }
"""
PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def write_files(directory: Path) -> None:
    """The files that valid --file options read: an inventory, a policy, a FleetConfig."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "inventory.json").write_text(json.dumps(inventory(cpus=8, gpus=1)))
    policy = [{"effect": "allow", "actions": ["*"], "resources": ["tenant:acme/*"]}]
    (directory / "policy.json").write_text(json.dumps(policy))
    (directory / "fleet.yaml").write_text(FLEETCONFIG)
    (directory / "provider-token").write_text("walk-token\n")
    (directory / "sysfs").mkdir(exist_ok=True)


def seed(url: str) -> dict[str, str]:
    """A pool offered to acme, a flavor, a host with an inventory, acme's instance,
    reservation, token, webhook (with a delivery), service, index and environment, and
    root's provider account; returns their ids."""
    from bcfleet.clock import FakeClock

    fleet = open_fleet(url, FakeClock(T0))
    try:
        api = fleet.api
        pool = hosted_pool(fleet)
        webhook = api.webhooks.create(OP, tenant_id="acme", url="https://hook.invalid/walk")
        host(fleet, pool["id"], "fra-01", inventory(cpus=16, gpus=2), labels=PLACEMENT)
        flavor(fleet, pool["id"], "g1.small")
        run_vps_hosts(fleet, fleet.now())
        api.settings.compute_set(OP, tenant_id="acme", serverless_pool="vps-fra")
        instance = api.instances.create(OP, tenant_id="acme", pool_id=pool["id"],
                                        flavor="g1.small", name="walk-vm")  # fmt: skip
        stopped = api.instances.create(OP, tenant_id="acme", pool_id=pool["id"],
                                       flavor="g1.small", name="walk-stopped")  # fmt: skip
        api.instances.stop(OP, stopped["id"])
        reservation = api.reservations.create(OP, tenant_id="acme", pool_id=pool["id"],
                                              gpus=1, duration="1h")  # fmt: skip
        made = api.iam.create_token(OP, tenant_id="acme", name="alice", role="admin")
        enqueue(fleet, fleet.now())
        delivery = api.webhooks.deliveries(OP, webhook["id"])["items"][0]
        service = api.services.create(OP, tenant_id="acme", workspace="prod", name="web")
        index = api.indexes.create(OP, tenant_id="acme", workspace="prod", name="docs")
        environment = api.environments.create(OP, tenant_id="acme", name="stg", size="medium")
        api.provider_accounts.create(OP, tenant_id="root", name="hz", provider="hetzner",
                                     token_env="HCLOUD_TOKEN",
                                     endpoint="https://provider.invalid/v1")  # fmt: skip
        return {
            "pool": pool["id"],
            "instance": instance["id"],
            "stopped": stopped["id"],
            "reservation": reservation["id"],
            "token": made["id"],
            "acme_token": made["token"],
            "webhook": webhook["id"],
            "delivery": str(delivery["id"]),
            "service": service["id"],
            "index": index["id"],
            "environment": environment["id"],
        }
    finally:
        fleet.close()


def sqlite_world(directory: Path, files: Path) -> World:
    """The seeded fleet in an SQLite file; restoring copies the seeded file back."""
    directory.mkdir(parents=True, exist_ok=True)
    template, work = directory / "seeded.db", directory / "fleet.db"
    template.unlink(missing_ok=True)  # pytest may set a module's world up more than once
    ids = seed(f"sqlite:///{template}")

    def restore() -> None:
        for suffix in ("-wal", "-shm"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(template, work)

    restore()
    return World(f"sqlite:///{work}", "sqlite", files, ids, restore)


def postgres_world(files: Path, database: str) -> tuple[World, Any]:
    """The seeded fleet in a PostgreSQL database of its own; restoring empties every table and
    writes the seeded rows and sequence values back (far faster than CREATE DATABASE …
    TEMPLATE or TRUNCATE).

    Returns the world and a function that drops the database."""
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    url = f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{database}_walk"
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{database}_walk" WITH (FORCE)'))
        create_test_database(connection, f"{database}_walk")
    ids = seed(url)
    engine = create_engine(url)
    tables = SQLModel.metadata.sorted_tables
    with engine.connect() as connection:
        rows = {
            t.name: [dict(r) for r in connection.execute(t.select()).mappings()] for t in tables
        }
        sequences = [
            (name, *connection.execute(text(f'SELECT last_value, is_called FROM "{name}"')).one())
            for (name,) in connection.execute(
                text("SELECT sequence_name FROM information_schema.sequences")
            )
        ]

    def restore() -> None:
        with engine.begin() as connection:
            for table in reversed(tables):  # DELETE: far cheaper than TRUNCATE on tiny tables
                connection.execute(table.delete())
            for table in tables:
                if rows[table.name]:
                    connection.execute(table.insert(), rows[table.name])
            for name, last_value, is_called in sequences:
                connection.execute(
                    text("SELECT setval(:name, :value, :called)"),
                    {"name": f'"{name}"', "value": last_value, "called": is_called},
                )

    def drop() -> None:
        engine.dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{database}_walk" WITH (FORCE)'))
        admin.dispose()

    return World(url, "postgres", files, ids, restore), drop


def fleet_at(url: str) -> Fleet:
    """The walked fleet, for checks after the walk."""
    from bcfleet.clock import FakeClock

    return open_fleet(url, FakeClock(T0))


# ---------------------------------------------------------------------------
# Valid values


ROOT_AREAS = ("flavors", "pools", "hosts", "provider-accounts")
"""Areas whose seeded objects are root's: their --tenant is root; everywhere else acme."""

NEW_NAMES = {
    "flavors create": "g1.walk",
    "pools create": "walk-pool",
    "hosts adopt": "fra-02",
    "iam policies create": "walk-policy",
    "iam principals create": "bob",
    "iam tokens create": "carol",
    "indexes create": "docs2",
    "services create": "web2",
    "environments create": "stg2",
    "provider-accounts create": "hz2",
}
"""--name of the verbs that make something: a name not taken yet."""

BY_OPTION: dict[str, str] = {
    "--pool": "vps-fra",
    "--flavor": "g1.small",
    "--host": "fra-01",
    "--name": "g1.small",
    "--vcpu": "2",
    "--memory-gib": "4",
    "--disk-gib": "40",
    "--gpus": "1",
    "--duration": "1h",
    "--kind": "vps-host",
    "--provider": "hetzner",
    "--to": "acme",
    "--size": "medium",
    "--workspace": "prod",
    "--url": "https://hook.invalid/walk2",
}

ARGUMENTS = {
    "instance_id": "instance",
    "reservation_id": "reservation",
    "service_id": "service",
    "index_id": "index",
    "environment_id": "environment",
    "webhook_id": "webhook",
    "delivery_id": "delivery",
    "token_id": "token",
    "pool": "pool",
}
"""Positional arguments that name a seeded object: the key of its id in World.ids."""

FIXED_ARGUMENTS = {
    "account": "hz",
    "tenant_id": "walkers",
    "name": "walk.meter",
    "lock_id": "apply",
}
FILES = {
    "hosts report": "inventory.json",
    "iam policies create": "policy.json",
    "validate": "fleet.yaml",
    "plan": "fleet.yaml",
    "apply": "fleet.yaml",
}


def valid_value(world: World, command: str, param: Param) -> str:
    """A value of ``param`` that the seeded fleet accepts for ``command``."""
    if param.positional:
        if command in ("instances resize", "instances start"):
            return world.ids["stopped"]
        if param.name in ARGUMENTS:
            return world.ids[ARGUMENTS[param.name]]
        return FIXED_ARGUMENTS[param.name]
    if param.name == "--tenant":
        return "root" if command.split()[0] in ROOT_AREAS else "acme"
    if param.name == "--file":
        return world.path(FILES[command])
    if param.name == "--name" and command in NEW_NAMES:
        return NEW_NAMES[command]
    return BY_OPTION[param.name]


def argv(
    world: World,
    command: Command,
    hostile: Param | None,
    value: str | None,
    common: tuple[str, str] | None = None,
) -> list[str]:
    """`fleet COMMAND --json`, its required options and EXTRA with valid values, and ``hostile``
    set to ``value`` (or the common option ``common``, a flag and its value, in place of
    --db); positional arguments last, after `--`, so that "-1" is a value."""
    options: list[str] = []
    positionals: list[str] = []
    extra = list(EXTRA.get(command.path, ()))
    if hostile is not None and hostile.name in extra:
        index = extra.index(hostile.name)
        del extra[index : index + 2]
    if command.path == "provider-accounts create" and hostile and hostile.name == "--token-file":
        extra = []  # one token source at a time
    for param in command.params:
        if param is hostile:
            assert value is not None
            (positionals if param.positional else options).extend(
                [value] if param.positional else [param.name, value]
            )
        elif param.required or (command.path == "apply" and param.name == "--file" and not (
            hostile and hostile.name == "plan_file")):  # fmt: skip
            given = valid_value(world, command.path, param)
            (positionals if param.positional else options).extend(
                [given] if param.positional else [param.name, given]
            )
    tail = ["--", *positionals] if positionals else []
    database = list(common) if common else ["--db", world.url]
    if common and common[0] == "--token":
        database += ["--db", world.url]
    return [*command.path.split(), "--json", *database, *options, *extra, *tail]
