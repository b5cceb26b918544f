"""Every `fleet` command, one hostile value at a time: no traceback, exit codes as documented.

The walk goes over click's whole command tree (tests/support/cli_walk.py) and gives each
option and argument of each command, in turn, every hostile value that fits it, with the
command's other required options valid in a small seeded fleet; on SQLite and PostgreSQL.
Each run must exit 0, 1, 2, 3, 4 or 64 (PRODUCT.md §5), print no traceback, print exactly one
strict JSON document under --json, and never answer INTERNAL. The fleet's invariants
(`fleet doctor --invariants`) hold after every run that changed it and after the walk; such a
run is then followed by a restore of the seeded fleet, so every run meets the same fleet.
On PostgreSQL the values whose fate may depend on the engine are walked (STORAGE_VALUES).

Every run walks a seeded sample of these cases that still holds, on each engine, every
command, every option of every command and every hostile-value class (a test checks it);
the seed is fixed, printed at the end of the run, and changed with BCFLEET_WALK_SEED.
BCFLEET_FULL_SUITE=1 (`scripts/check --full`) walks every case (tests/support/sampling.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bcfleet.cli.common import CREATES_DATABASE
from tests.support.cli_walk import (
    CHANGES_ON_ERROR,
    READ_VERBS,
    SKIPPED,
    Command,
    Param,
    World,
    argv,
    command_tree,
    postgres_world,
    sqlite_world,
    write_files,
)
from tests.support.fleet import T0, CliResult, run_cli
from tests.support.sampling import covering_sample, full_suite, walk_seed

EXIT_CODES = {0, 1, 2, 3, 4, 64}
DIRECTORY = "<a directory>"  # replaced by a real directory of the test's own
PASSWD = "/etc/passwd"

EVERYWHERE = {
    "huge": "100000000000000000000000",
    "negative": "-1",
    "nan": "NaN",
    "inf": "inf",
    "empty": "",
    "long-text": "x" * 10_000,
    "long-digits": "9" * 10_000,
    "nul": "web\x00vm",
    "rtl": "evil\u202egnp.exe",
    "non-utf8": "caf\udce9",  # what Python makes of a byte that is not UTF-8 in a real argv
}
"""Hostile values every option and argument gets."""

BY_CATEGORY: dict[str, dict[str, str]] = {
    "time": {"far-future": "9999-12-31T23:00:00Z", "year-1": "0001-01-01T00:00:00Z",
             "not-a-time": "yesterday"},
    "duration": {"far-future": "9999-12-31T23:00:00Z", "negative-duration": "-5h",
                 "fraction": "1.5h", "huge-duration": "99999999999999999999d", "zero": "0s"},
    "url": {"url-bracket": "http://[::1", "url-ftp": "ftp://x", "url-mysql": "mysql://x",
            "url-loopback": "http://127.0.0.1:9/"},
    "path": {"dev-null": "/dev/null", "directory": DIRECTORY, "passwd": PASSWD},
}  # fmt: skip
"""Hostile values for the options whose names say what they hold."""

CATEGORIES = {
    "time": {"--start", "--since", "--until"},
    "duration": {"--duration", "--expires-in", "--lock-timeout", "--interval", "--grace",
                 "--timeout", "--poll", "--boot-seconds"},
    "url": {"--url", "--endpoint", "--server"},
    "path": {"--file", "--root", "plan_file", "--out", "--token-file", "--inventory-file",
             "--domains"},
}  # fmt: skip

WRITES = {("plan", "--out")}
"""Options that write the file they name: /etc/passwd is replaced by a copy of it (the tests
may run as root)."""


def hostile_values(param: Param) -> dict[str, str]:
    values = dict(EVERYWHERE)
    for category, names in CATEGORIES.items():
        if param.name in names or (category == "path" and param.kind == "path"):
            values.update(BY_CATEGORY[category])
    return values


def walked_commands() -> list[Command]:
    return [c for c in command_tree() if c.path not in SKIPPED]


def case_id(command: Command, option: str, value_id: str) -> str:
    return f"{command.path.replace(' ', '/')}-{option.lstrip('-')}-{value_id}"


ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
STORAGE_VALUES = frozenset(
    {"huge", "negative", "empty", "long-text", "long-digits", "nul", "non-utf8", "rtl",
     "far-future", "huge-duration"}
)  # fmt: skip
"""The values walked on PostgreSQL too: those whose fate may depend on what the engine stores
(lengths, integer widths, encodings, times). The rest are refused while parsing, before any
database is asked, the same on both engines, and are walked on SQLite only to keep the walk
within a few minutes."""


@dataclass(frozen=True)
class Case:
    """One run of the walk: a command with one option (or --db, --token) given a hostile value."""

    engine: str
    command: Command
    option: str
    value_id: str
    value: str
    param: Param | None = None

    @property
    def id(self) -> str:
        return case_id(self.command, self.option, self.value_id)

    def classes(self) -> tuple[tuple[str, ...], ...]:
        """What the sample must cover, on each engine: the command, the option, the value class."""
        path = self.command.path
        return (
            (self.engine, "command", path),
            (self.engine, "option", path, self.option),
            (self.engine, "value", self.value_id),
        )


def value_cases() -> list[Case]:
    """Every command's every option, every hostile value that fits it, on both engines."""
    return [
        Case(engine, command, param.name, value_id, value, param)
        for engine in ("sqlite", "postgres")
        for command in walked_commands()
        for param in command.params
        for value_id, value in hostile_values(param).items()
        if engine == "sqlite" or value_id in STORAGE_VALUES
    ]


def common_option_commands() -> list[Command]:
    """Where --db and --token are walked: they are handled once for every command
    (cli/common.py), so one command of each area stands for it, plus every verb that may
    create a database (they open it differently)."""
    chosen: dict[str, Command] = {}
    for command in walked_commands():
        verb = command.path.split()[-1]
        key = command.path if verb in CREATES_DATABASE else command.path.split()[0]
        chosen.setdefault(key, command)
    return list(chosen.values())


COMMON_VALUES = {
    "--db": {**EVERYWHERE, **BY_CATEGORY["url"], **BY_CATEGORY["path"]},
    "--token": EVERYWHERE,
}


def common_cases(flag: str) -> list[Case]:
    """--db or --token given every hostile value of theirs, on the commands that stand for all."""
    return [
        Case("sqlite", command, flag, value_id, value)
        for command in common_option_commands()
        for value_id, value in COMMON_VALUES[flag].items()
    ]


def sample(cases: list[Case]) -> list[Case]:
    """The seeded sample every run walks: every command, option and value class of `cases`
    (tests/support/sampling.py)."""
    return covering_sample(cases, Case.classes, walk_seed())


def walked(cases: list[Case]) -> list[Any]:
    """The cases this run walks, as parameters: the sample, or all of them under
    BCFLEET_FULL_SUITE=1, where those outside the sample are marked `full` and `slow`."""
    sampled = sample(cases)
    if not full_suite():
        return [_param(case, []) for case in sampled]
    kept = set(sampled)
    return [
        _param(case, [] if case in kept else [pytest.mark.full, pytest.mark.slow]) for case in cases
    ]


def _param(case: Case, marks: list[Any]) -> Any:
    if case.engine == "postgres":
        marks = [*marks, pytest.mark.postgres]
    return pytest.param(case.engine, case, id=f"{case.engine}-{case.id}", marks=marks)


# ---------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def walk_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The module's directory, also the working directory (a relative --out lands here)."""
    directory = tmp_path_factory.mktemp("walk")
    write_files(directory / "files")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.delenv("BCFLEET_DB", raising=False)
        patch.delenv("BCFLEET_TOKEN", raising=False)
        patch.setenv("BCFLEET_NOW", T0.isoformat())
        patch.setenv("HCLOUD_TOKEN", "walk-hcloud-token")
        yield directory


@pytest.fixture(scope="module")
def sqlite_walk_world(walk_dir: Path) -> Iterator[World]:
    """The seeded fleet on SQLite, shared by the walk's runs; its invariants hold after."""
    made = sqlite_world(walk_dir / "sqlite", walk_dir / "files")
    yield made
    assert_invariants(made)


@pytest.fixture(scope="module")
def postgres_walk_world(walk_dir: Path, pg_database: str) -> Iterator[World]:
    """The seeded fleet on PostgreSQL, shared by the walk's runs; its invariants hold after."""
    made, drop = postgres_world(walk_dir / "files", pg_database.rsplit("/", 1)[1])
    try:
        yield made
        assert_invariants(made)
    finally:
        drop()


@pytest.fixture
def world(request: pytest.FixtureRequest, engine: str) -> World:
    """The seeded fleet of the engine the test is parametrized with."""
    made: World = request.getfixturevalue(f"{engine}_walk_world")
    return made


@pytest.fixture(scope="module")
def spare_world(walk_dir: Path) -> World:
    """A seeded SQLite fleet whose ids and files give the --db walk its valid defaults."""
    return sqlite_world(walk_dir / "spare", walk_dir / "files")


# ---------------------------------------------------------------------------
# Checks


def strict_json(raw: str) -> Any:
    """One JSON document, refusing NaN and Infinity as other JSON readers do."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(raw, parse_constant=refuse)


def check_run(result: CliResult, args: list[str]) -> Any:
    """The walk's rules for one run; returns the JSON document it printed."""
    shown = [a if len(a) < 60 else a[:20] + f"…({len(a)} chars)" for a in args]
    context = (
        f"fleet {' '.join(map(repr, shown))}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    )
    assert result.exit_code in EXIT_CODES, context
    assert "Traceback" not in result.stdout + result.stderr, context
    try:
        document = strict_json(result.stdout)
    except ValueError as error:
        raise AssertionError(
            f"stdout is not one strict JSON document ({error})\n{context}"
        ) from None
    if isinstance(document, dict) and isinstance(document.get("error"), dict):
        assert document["error"].get("code") != "INTERNAL", context
    return document


def assert_invariants(world: World) -> None:
    """`fleet doctor --invariants --json` finds nothing wrong (after the walk, and before each
    restore: what a run that succeeded changed is checked before it is undone)."""
    args = ["doctor", "--invariants", "--json", "--db", world.url]
    result = run_cli(*args)
    document = check_run(result, args)
    assert result.exit_code == 0 and document["invariants"]["ok"] is True, document


def _value(value: str, command: Command, param: Param, walk_dir: Path) -> str:
    if value == DIRECTORY:
        return str(walk_dir)
    if value == PASSWD and (command.path, param.name) in WRITES:
        copy = walk_dir / "passwd"
        copy.write_bytes(Path(PASSWD).read_bytes())
        return str(copy)
    return value


def run(world: World, args: list[str], command: Command) -> CliResult:
    result = run_cli(*args)
    changed = result.exit_code == 0 and command.path.split()[-1] not in READ_VERBS
    if changed or command.path in CHANGES_ON_ERROR:
        assert_invariants(world)
        world.restore()
    return result


# ---------------------------------------------------------------------------
# Tests


def test_the_walk_covers_the_whole_command_tree() -> None:
    """Every command is walked or skipped for a reason; the skipped ones exist."""
    paths = {c.path for c in command_tree()}
    assert set(SKIPPED) <= paths
    assert len(paths) > 90 and {"flavors create", "reservations create"} <= paths


@pytest.mark.parametrize("engine", ENGINES)
def test_every_command_runs_with_the_valid_defaults(world: World) -> None:
    """The defaults are valid, so a refusal in the walk is the hostile value's."""
    failing = {}
    for command in walked_commands():
        args = argv(world, command, None, None)
        result = run(world, args, command)
        document = check_run(result, args)
        if result.exit_code != 0:
            failing[command.path] = document["error"]["code"]
    assert failing == EXPECTED_FAILURES


EXPECTED_FAILURES = {
    "demo": "CONFLICT",  # the database holds a fleet; demo builds one only in an empty one
    "force-unlock": "NOT_FOUND",  # no apply is running, so there is no lock to break
    "provider-accounts offers": "PROVIDER_UNAVAILABLE",  # the account's endpoint does not resolve
    "services deploy": "NO_CAPACITY",  # no spare instance of the service's size
}
"""Commands that cannot succeed in the seeded fleet, and the error each gives instead."""


@pytest.mark.parametrize(("engine", "case"), walked(value_cases()))
def test_hostile_value(world: World, walk_dir: Path, case: Case) -> None:
    assert case.param is not None
    given = _value(case.value, case.command, case.param, walk_dir)
    args = argv(world, case.command, case.param, given)
    check_run(run(world, args, case.command), args)


@pytest.mark.parametrize(("engine", "case"), walked(common_cases("--token")))
def test_hostile_token(world: World, case: Case) -> None:
    """A token is checked before any SQL: walked on SQLite only."""
    args = argv(world, case.command, None, None, common=("--token", case.value))
    check_run(run(world, args, case.command), args)


@pytest.mark.parametrize(("engine", "case"), walked(common_cases("--db")))
def test_hostile_database_url(spare_world: World, walk_dir: Path, engine: str, case: Case) -> None:
    """A hostile --db replaces the database, so these runs do not depend on the engine."""
    given = str(walk_dir) if case.value == DIRECTORY else case.value
    args = argv(spare_world, case.command, None, None, common=("--db", given))
    check_run(run_cli(*args), args)


WALKS = {"value": value_cases, "--token": lambda: common_cases("--token"),
         "--db": lambda: common_cases("--db")}  # fmt: skip


@pytest.mark.parametrize("seed", ["0", "1", "walk", "2026-12-06"])
@pytest.mark.parametrize("walk", sorted(WALKS))
def test_every_sample_covers_every_command_option_and_value_class(walk: str, seed: str) -> None:
    """Whatever the seed, the sample has, on each engine, every command, every option of
    every command and every hostile-value class the whole walk has, in under a fifth of its runs."""
    cases = WALKS[walk]()
    picked = covering_sample(cases, Case.classes, seed)

    def covered(chosen: list[Case]) -> dict[str, set[tuple[str, ...]]]:
        return {
            "commands": {(c.engine, c.command.path) for c in chosen},
            "options": {(c.engine, c.command.path, c.option) for c in chosen},
            "value classes": {(c.engine, c.value_id) for c in chosen},
        }

    assert covered(picked) == covered(cases)
    assert len(picked) * 5 < len(cases)
    assert {c.engine for c in picked} == ({"sqlite", "postgres"} if walk == "value" else {"sqlite"})


def test_the_sample_depends_on_the_seed_alone() -> None:
    """The same seed picks the same cases (each xdist worker collects the walk on its own);
    another seed picks others."""
    cases = value_cases()
    first = covering_sample(cases, Case.classes, "0")
    assert covering_sample(list(cases), Case.classes, "0") == first
    assert covering_sample(cases, Case.classes, "1") != first
