"""A CLI that starts at once: help imports no database code, reads never import Alembic.

Checked on what a fresh process imports (`python -X importtime`), never on a clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import click
import pytest
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError

from bcfleet.cli.main import COMMANDS, SUMMARIES, LazyGroup, cli, module_commands
from bcfleet.fleet import Fleet
from bcfleet.store.engine import make_engine
from bcfleet.store.models import TABLE_MODULES
from bcfleet.store.schema import HEAD_REVISION, alembic_config, stamped_revision
from tests.support.builders import OP, host, hosted_pool, inventory, token
from tests.support.cli_walk import SKIPPED, argv, command_tree, sqlite_world, write_files
from tests.support.fleet import T0

DATABASE_PACKAGES = ("sqlalchemy", "sqlmodel", "alembic")


def imported_by(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh `python -m bcfleet ARGS` imports (it must succeed)."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bcfleet", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def top_packages(modules: set[str]) -> set[str]:
    return {name.split(".", 1)[0] for name in modules}


def test_help_imports_no_database_code() -> None:
    modules = imported_by(["--help"])
    assert "bcfleet.cli.main" in modules  # the check sees the CLI's own imports
    assert top_packages(modules).isdisjoint(DATABASE_PACKAGES)


def test_listing_hosts_of_an_existing_fleet_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/fleet.db"
    Fleet.open(url).close()
    modules = imported_by(["hosts", "list", "--json"], {"BCFLEET_DB": url})
    assert "sqlalchemy" in modules  # it did open the fleet
    assert "alembic" not in top_packages(modules)


WRITES_SCHEMA = {"db upgrade": "creates or migrates the schema: Alembic's work"}
"""The commands that may import Alembic on a fleet already at the newest revision, and why."""

_EVERY_COMMAND = """
import contextlib, io, json, sys
from pathlib import Path
from bcfleet.cli.main import main

runs, template, work = json.loads(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
for path, args in runs:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(args)
        except SystemExit:
            pass
    if "alembic" in sys.modules:
        print(path)
        break
    for suffix in ("-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    work.write_bytes(template.read_bytes())
"""


def test_no_command_but_a_schema_writer_imports_alembic_on_a_fleet_at_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command the CLI walk runs (its valid defaults, on its seeded fleet), in one fresh
    process, each on the seeded fleet again: none imports Alembic but those of WRITES_SCHEMA."""
    monkeypatch.chdir(tmp_path)
    write_files(tmp_path / "files")
    world = sqlite_world(tmp_path / "sqlite", tmp_path / "files")
    paths = {command.path for command in command_tree()}
    assert set(WRITES_SCHEMA) <= paths
    runs = [
        (command.path, argv(world, command, None, None))
        for command in command_tree()
        if command.path not in SKIPPED and command.path not in WRITES_SCHEMA
    ]
    assert len(runs) > 80
    run = subprocess.run(
        [sys.executable, "-c", _EVERY_COMMAND, json.dumps(runs),
         str(tmp_path / "sqlite" / "seeded.db"), str(tmp_path / "sqlite" / "fleet.db")],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k not in ("BCFLEET_DB", "BCFLEET_TOKEN")},
             "BCFLEET_NOW": T0.isoformat(), "HCLOUD_TOKEN": "startup-token"},
        check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "", f"{run.stdout.strip()!r} imported Alembic"


def modules_loaded(args: list[str], url: str, token: str | None = None) -> tuple[set[str], str]:
    """The modules a fresh process running `fleet ARGS` imported, and what it printed."""
    code = (
        "import contextlib, io, sys\nfrom bcfleet.cli.main import main\nout = io.StringIO()\n"
        f"try:\n    with contextlib.redirect_stdout(out):\n        main({args!r})\n"
        "except SystemExit as end:\n    assert not end.code, end.code\n"
        "print(out.getvalue() + '\\n' + ' '.join(sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k != "BCFLEET_TOKEN"}
    if token is not None:
        env["BCFLEET_TOKEN"] = token
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "BCFLEET_DB": url},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    printed, _, modules = run.stdout.rstrip("\n").rpartition("\n")
    return set(modules.split()), printed


ORM_MODULES = ("sqlmodel", "sqlalchemy.orm", "pydantic", "bcfleet.store.models.")


# A read makes no id and places nothing: settings holds the host reserve without the fit check.
NOT_FOR_A_LISTING = ("ulid", "bcfleet.domain.fit", "bcfleet.domain.shapes", "bcfleet.placement")


def orm_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(ORM_MODULES) or m in ORM_MODULES}


@pytest.mark.parametrize(
    ("args", "as_token"),
    [
        (["hosts", "list", "--json"], False),
        (["hosts", "list", "--json", "--pool", "vps-fra"], False),
        (["hosts", "list", "--json", "--tenant", "acme"], False),
        (["hosts", "list", "--json"], True),
    ],
    ids=["all", "one-pool", "for-a-tenant", "a-token"],
)
def test_listing_hosts_imports_neither_sqlmodel_nor_the_orm_and_lists_what_the_api_lists(
    tmp_path: Path, args: list[str], as_token: bool
) -> None:
    url = f"sqlite:///{tmp_path}/fleet.db"
    fleet = Fleet.open(url)
    try:
        pool = hosted_pool(fleet, offered_to=("acme",))
        host(fleet, pool["id"], "fra-1", inventory())
        credential = token(fleet, "root", "lister", role="viewer") if as_token else OP
        tenant = args[args.index("--tenant") + 1] if "--tenant" in args else None
        pool_name = args[args.index("--pool") + 1] if "--pool" in args else None
        expected = fleet.api.hosts.list(credential, tenant_id=tenant, pool=pool_name)
    finally:
        fleet.close()
    modules, printed = modules_loaded(args, url, credential if as_token else None)
    assert orm_modules(modules) == set()
    assert modules & set(NOT_FOR_A_LISTING) == set()
    listed = json.loads(printed)["items"]
    assert [h["name"] for h in listed] == [h["name"] for h in expected["items"]]
    assert [{k: v for k, v in h.items() if k != "capacityText"} for h in listed] == expected[
        "items"
    ]
    assert listed != [] or tenant == "acme"  # acme is offered the pool, never shown its hosts


def test_validate_reads_no_database_and_imports_no_sqlalchemy(tmp_path: Path) -> None:
    """CI runs `fleet validate` on every push: it checks the file alone."""
    url = f"sqlite:///{tmp_path}/none.db"
    example = str(Path(__file__).resolve().parents[2] / "fleet.example.yaml")
    modules, printed = modules_loaded(["validate", "-f", example, "--json"], url)
    assert {m for m in modules if m.split(".")[0] in ("sqlalchemy", "sqlmodel", "alembic")} == set()
    assert json.loads(printed)["valid"] is True
    assert not (tmp_path / "none.db").exists()


def test_a_write_maps_every_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/fleet.db"
    Fleet.open(url).close()
    modules, _ = modules_loaded(["tenants", "create", "acme"], url)
    wrote = {m.rsplit(".", 1)[1] for m in modules if m.startswith("bcfleet.store.models.")}
    assert wrote == set(TABLE_MODULES)  # a flush orders tables by foreign keys: all are known


def test_a_fleet_not_at_head_is_handed_to_alembic(tmp_path: Path) -> None:
    """Only a stamp equal to HEAD_REVISION skips Alembic; any other is Alembic's to judge."""
    url = f"sqlite:///{tmp_path}/fleet.db"
    Fleet.open(url).close()
    engine = make_engine(url)
    assert stamped_revision(engine) == HEAD_REVISION
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'fffffff'")
    engine.dispose()
    with pytest.raises(CommandError, match="fffffff"):
        Fleet.open(url)


def test_head_revision_constant_is_the_migrations_head() -> None:
    engine = make_engine("sqlite://")
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert head == HEAD_REVISION


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_summary_is_the_commands_own_first_sentence(name: str) -> None:
    command = module_commands(COMMANDS[name])[name]
    assert SUMMARIES[name] == command.get_short_help_str(limit=sys.maxsize)


def test_root_help_lists_commands_as_click_would() -> None:
    """The Commands section from SUMMARIES equals click's own, rendered from every module."""
    with click.Context(cli, info_name="fleet") as ctx:
        ours = click.HelpFormatter(width=70)
        cli.format_commands(ctx, ours)
        theirs = click.HelpFormatter(width=70)
        click.Group.format_commands(cli, ctx, theirs)
    assert isinstance(cli, LazyGroup)
    assert ours.getvalue() == theirs.getvalue()
    assert "hosts" in ours.getvalue()


def test_api_areas_are_made_once_even_when_threads_ask_together(tmp_path: Path) -> None:
    fleet = Fleet.open(f"sqlite:///{tmp_path}/fleet.db")
    seen: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(fleet.api.usage)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8
    assert all(area is seen[0] for area in seen)
    flavors, catalog = fleet.api.flavors, fleet.api.offer_catalog
    assert flavors.offer_check == catalog.flavor_check
    assert fleet.api.provider_accounts.catalog is catalog
    fleet.close()
