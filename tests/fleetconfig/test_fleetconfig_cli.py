"""`fleet validate|plan|apply|force-unlock` as an operator and a CI job use them: output, exit codes,
golden plans, prompts, saved plans, and a database left byte-for-byte alone when anything fails.

Golden files live in tests/fleetconfig/golden/; run with UPDATE_GOLDEN=1 to rewrite them.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.reconcile import lock
from tests.support.builders import OP, inventory
from tests.support.fleet import T0, CliResult, open_fleet, run_cli
from tests.support.fleetconfig import (
    BASE,
    CHANGED,
    EXAMPLE,
    dump,
    settle_sqlite,
    sha256_file,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
Cli = Callable[..., CliResult]


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text)
        return
    assert path.exists(), f"{path.name} is missing: run the tests with UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} differs: run with UPDATE_GOLDEN=1 if intended"


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], str]:
    def make(text: str, name: str = "fleet.yaml") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return make


@pytest.fixture
def db_file(sqlite_url: str) -> Path:
    return Path(sqlite_url.removeprefix("sqlite:///"))


# ---------------------------------------------------------------------------
# validate


def test_validate_accepts_the_example(cli: Cli) -> None:
    result = cli("validate", "-f", str(EXAMPLE))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip().endswith("fleet.example.yaml: valid (16 objects)")


def test_validate_prints_file_line_column_and_exits_1(cli: Cli, write: Callable[..., str]) -> None:
    path = write(BASE.replace("vcpu: 2, memoryGiB: 4", "vcpus: 2, memoryGiB: 4", 1))
    result = cli("validate", "-f", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{path}:21:5: missing required field 'vcpu' [$.flavors[0]]",
        f"{path}:21:38: unknown field 'vcpus'; did you mean 'vcpu'? [$.flavors[0].vcpus]",
        f"error: INVALID_INPUT: {path}: 2 error(s)",
    ]
    as_json = cli("validate", "-f", path, "--json")
    assert as_json.exit_code == 1
    error = as_json.json()["error"]  # type: ignore[index]
    assert error["code"] == "INVALID_INPUT"
    assert {"file", "line", "column", "path", "message"} <= set(error["details"]["errors"][0])


def test_validate_json_lists_warnings(cli: Cli, write: Callable[..., str]) -> None:
    path = write(BASE.replace("offeredTo: [acme]\n", "offeredTo: [acme, root]\n"))
    body = cli("validate", "-f", path, "--json").json()
    assert body["valid"] is True and body["objects"] == 15  # type: ignore[index]
    assert "changes nothing and is ignored" in body["warnings"][0]["message"]  # type: ignore[index]


# ---------------------------------------------------------------------------
# plan and apply


def test_plan_apply_plan_with_detailed_exit_codes(cli: Cli, write: Callable[..., str]) -> None:
    path = write(BASE)
    first = cli("plan", "-f", path, "--detailed-exitcode")
    assert (
        first.exit_code == 2
        and "Plan: 1 to adopt, 14 to add, 0 to change, 0 to delete." in first.stdout
    )
    applied = cli("apply", "-f", path, "--yes")
    assert applied.exit_code == 0, applied.stderr
    assert applied.stdout.rstrip().endswith(
        "Apply complete! 1 adopted, 14 added, 0 changed, 0 deleted."
    )
    again = cli("plan", "-f", path, "--detailed-exitcode")
    assert (
        again.exit_code == 0
        and again.stdout == "No changes. The fleet matches the configuration.\n"
    )
    nothing = cli("apply", "-f", path, "--yes")
    assert nothing.exit_code == 0 and "No changes." in nothing.stdout


def test_golden_plan_of_the_example_on_a_fresh_database(cli: Cli) -> None:
    text = cli("plan", "-f", str(EXAMPLE))
    assert text.exit_code == 0, text.stderr
    assert_golden("cli_plan_example.txt", text.stdout)
    assert_golden("cli_plan_example.json", cli("plan", "-f", str(EXAMPLE), "--json").stdout)


def test_golden_plan_of_a_changed_document(
    cli: Cli, write: Callable[..., str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("apply", "-f", write(BASE), "--yes").exit_code == 0
    fleet = open_fleet(sqlite_url, FakeClock(T0))
    for name in ("fra-01", "fra-02"):
        fleet.api.hosts.report(OP, host=name, inventory=inventory(cpus=32, memory_gib=256))
    run_vps_hosts(fleet, fleet.now())
    fleet.close()
    write(CHANGED, "changed.yaml")
    monkeypatch.chdir(Path(write(BASE)).parent)
    path = "changed.yaml"
    text = cli("plan", "-f", path, "--detailed-exitcode")
    assert text.exit_code == 2
    assert_golden("cli_plan_changed.txt", text.stdout)
    as_json = cli("plan", "-f", path, "--json")
    assert_golden("cli_plan_changed.json", as_json.stdout)
    changed = [
        c for c in json.loads(as_json.stdout)["resource_changes"] if c["actions"] != ["no-op"]
    ]
    assert len(changed) == 8
    assert cli("apply", "-f", path, "--yes").exit_code == 0
    assert cli("plan", "-f", path, "--detailed-exitcode").exit_code == 0


def test_apply_json_reports_the_summary(cli: Cli, write: Callable[..., str]) -> None:
    body = cli("apply", "-f", write(BASE), "--yes", "--json").json()
    assert body["applied"] is True  # type: ignore[index]
    assert body["summary"] == {"adopted": 1, "added": 14, "changed": 0, "deleted": 0, "archived": 0}  # type: ignore[index]
    assert body["lock"]["name"] == "apply"  # type: ignore[index]


# ---------------------------------------------------------------------------
# Approval


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_apply_asks_on_a_terminal_and_only_yes_applies(
    cli: Cli, write: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(BASE)
    monkeypatch.setattr("sys.stdin", Terminal("no\n"))
    cancelled = cli("apply", "-f", path)
    assert cancelled.exit_code == 1 and "Apply cancelled." in cancelled.stderr
    assert "Only 'yes' will be accepted to approve." in cancelled.stdout
    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    applied = cli("apply", "-f", path)
    assert applied.exit_code == 0 and "Apply complete! 1 adopted, 14 added" in applied.stdout


class WriteAtPrompt(Terminal):
    """A terminal whose operator, while the prompt waits, has someone run `fleet ARGS`."""

    def __init__(self, answer: str, *args: str, db: str) -> None:
        super().__init__(answer)
        self.args, self.db = args, db
        self.written: CliResult | None = None

    def readline(self, size: int | None = -1) -> str:
        if self.written is None:
            self.written = run_cli(*self.args, db=self.db)
        return super().readline(size)


MEDIUM_5 = ("settings", "compute", "set", "--tenant", "acme", "--spares", "medium=5")
MORE_LARGE = EXAMPLE.read_text().replace(
    "large:  { enabled: true, spares: 2 }", "large:  { enabled: true, spares: 4 }"
)


@pytest.mark.parametrize(
    ("write_args", "code"),
    [
        pytest.param(MEDIUM_5, 4, id="a-before-value-shown-changed"),
        pytest.param(("tenants", "create", "globex"), 0, id="an-unrelated-write"),
    ],
)
def test_a_write_during_the_prompt_to_what_the_plan_shows_is_stale_plan(
    db_url: str,
    write: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    write_args: tuple[str, ...],
    code: int,
) -> None:
    """The before-values shown are approved with the plan: the operator saw medium 1, so a
    `yes` after medium became 5 answers STALE_PLAN (exit 4) and applies nothing; a write the
    plan does not touch leaves it valid."""
    monkeypatch.setenv("BCFLEET_NOW", T0.isoformat())
    assert run_cli("apply", "-f", str(EXAMPLE), "--yes", db=db_url).exit_code == 0
    terminal = WriteAtPrompt("yes\n", *write_args, db=db_url)
    monkeypatch.setattr("sys.stdin", terminal)
    result = run_cli("apply", "-f", write(MORE_LARGE), db=db_url)
    assert terminal.written is not None and terminal.written.exit_code == 0
    assert "Only 'yes' will be accepted to approve." in result.stdout
    assert result.exit_code == code, result.stderr
    shown = run_cli("settings", "compute", "show", "--tenant", "acme", "--json", db=db_url)
    sizes = json.loads(shown.stdout)["sizes"]
    medium, large = sizes["medium"]["spares"], sizes["large"]["spares"]
    if code == 4:
        assert "STALE_PLAN" in result.stderr and "compute.acme" in result.stderr
        assert (medium, large) == (5, 2)
    else:
        assert (medium, large) == (1, 4)


def test_apply_without_a_terminal_needs_yes(
    cli: Cli, write: Callable[..., str], db_file: Path
) -> None:
    path = write(BASE)
    result = cli("apply", "-f", path)
    assert result.exit_code == 64 and "pass --yes" in result.stderr
    assert cli("apply", path, "-f", path, "--yes").exit_code == 64
    assert cli("apply").exit_code == 64
    assert cli("apply", "-f", path, "--yes", "--lock-timeout", "soon").exit_code == 64


# ---------------------------------------------------------------------------
# Failures leave the database alone


OWNER_CHANGES = BASE.replace(
    "  - name: vps-fra\n    kind: vps-host\n",
    "  - name: vps-fra\n    kind: vps-host\n    owner: acme\n",
)
# (document, whether `fleet validate` already refuses it: the others fail when planned)
BROKEN = [
    pytest.param(
        "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants: [\n", True, id="bad-yaml"
    ),
    pytest.param(BASE.replace("vcpu: 64,", 'vcpu: "lots",'), True, id="wrong-type"),
    pytest.param(BASE.replace("gpuModel: L40S", "gpuModell: L40S"), True, id="unknown-field"),
    pytest.param(
        BASE.replace("pool: vps-fra, name: g1.large", "pool: vps-ams, name: g1.large"),
        True,
        id="dangling-reference",
    ),
    pytest.param("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n", False, id="removes-everything"),
    pytest.param(OWNER_CHANGES, False, id="pool-owner-changes"),
]


@pytest.mark.parametrize(("text", "invalid"), BROKEN)
def test_a_failed_validate_plan_or_apply_leaves_the_database_byte_for_byte(
    cli: Cli, write: Callable[..., str], db_file: Path, text: str, invalid: bool
) -> None:
    assert cli("apply", "-f", write(BASE, "base.yaml"), "--yes").exit_code == 0
    settle_sqlite(db_file)
    before, rows = sha256_file(db_file), dump(f"sqlite:///{db_file}")
    path = write(text)
    assert cli("validate", "-f", path).exit_code == (1 if invalid else 0)
    for args in (
        ("plan",),
        ("plan", "--detailed-exitcode"),
        ("apply", "--yes"),
        ("apply", "--yes", "--json"),
    ):
        result = cli(*args, "-f", path)
        assert result.exit_code == 1, (args, result.stdout, result.stderr)
        assert "Apply complete" not in result.stdout
    assert dump(f"sqlite:///{db_file}") == rows
    settle_sqlite(db_file)
    assert sha256_file(db_file) == before


def test_errors_point_at_the_document(cli: Cli, write: Callable[..., str]) -> None:
    path = write(BASE.replace("pool: vps-fra, name: g1.large", "pool: vps-ams, name: g1.large"))
    result = cli("plan", "-f", path)
    assert result.exit_code == 1
    assert (
        f"{path}:22:13: unknown pool 'vps-ams'; did you mean 'vps-fra'? [$.flavors[1].pool]"
        in result.stderr
    )


# ---------------------------------------------------------------------------
# Saved plans and the lock


def test_a_saved_plan_applies_once_then_exits_4(
    cli: Cli, write: Callable[..., str], tmp_path: Path
) -> None:
    out = str(tmp_path / "plan.json")
    made = cli("plan", "-f", write(BASE), "--out", out)
    assert made.exit_code == 0 and f"fleet apply {out}" in made.stdout
    saved = json.loads(Path(out).read_text())
    assert saved["state_revision"] == 0 and saved["bcfleet_version"]
    assert len(saved["config"]["sha256"]) == 64
    first = cli("apply", out)
    assert first.exit_code == 0 and "Apply complete! 1 adopted, 14 added" in first.stdout
    second = cli("apply", out)
    assert second.exit_code == 4 and "STALE_PLAN" in second.stderr


def test_an_edited_saved_plan_is_refused(
    cli: Cli, write: Callable[..., str], tmp_path: Path
) -> None:
    out = tmp_path / "plan.json"
    assert cli("plan", "-f", write(BASE), "--out", str(out)).exit_code == 0
    saved = json.loads(out.read_text())
    saved["config"]["text"] = saved["config"]["text"].replace("vcpu: 64", "vcpu: 640")
    out.write_text(json.dumps(saved))
    result = cli("apply", str(out))
    assert result.exit_code == 1 and "edited after it was made" in result.stderr
    assert cli("apply", str(write("{}", "nope.json"))).exit_code == 1


def test_a_plan_with_errors_is_not_saved(
    cli: Cli, write: Callable[..., str], tmp_path: Path
) -> None:
    assert cli("apply", "-f", write(BASE), "--yes").exit_code == 0
    out = tmp_path / "plan.json"
    empty = write("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n", "empty.yaml")
    assert cli("plan", "-f", empty, "--out", str(out)).exit_code == 1
    assert not out.exists()
    assert cli("plan", "-f", empty, "--allow-empty", "--out", str(out)).exit_code == 0
    assert cli("apply", str(out)).exit_code == 0


def test_a_held_lock_exits_3_until_force_unlock(
    cli: Cli, write: Callable[..., str], sqlite_url: str
) -> None:
    other = Fleet.open(sqlite_url)  # another process: BCFLEET_NOW pinned, leases in real time
    held = lock.acquire(other, operation="apply prod.yaml", holder="deploy@ci-3")
    path = write(BASE)
    locked = cli("apply", "-f", path, "--yes")
    assert locked.exit_code == 3
    assert "error: LOCKED: the apply lock is held by deploy@ci-3" in locked.stderr
    assert f"fleet force-unlock {held.id}" in locked.stderr
    body = cli("apply", "-f", path, "--yes", "--json").json()
    assert body["error"]["details"]["lock"]["holder"] == "deploy@ci-3"  # type: ignore[index]
    unlocked = cli("force-unlock", held.id)
    assert unlocked.exit_code == 0 and "fleet apply is unlocked" in unlocked.stdout
    assert cli("force-unlock", held.id).exit_code == 1
    assert cli("apply", "-f", path, "--yes").exit_code == 0
    other.close()


def test_the_example_applies_and_replans_clean(cli: Cli) -> None:
    applied = cli("apply", "-f", str(EXAMPLE), "--yes")
    assert applied.exit_code == 0, applied.stderr
    assert "Apply complete! 1 adopted, 15 added, 0 changed, 0 deleted." in applied.stdout
    assert cli("plan", "-f", str(EXAMPLE), "--detailed-exitcode").exit_code == 0


def test_a_size_in_use_turned_off_fails_and_leaves_the_database_alone(
    cli: Cli, write: Callable[..., str], db_file: Path
) -> None:
    assert cli("apply", "-f", str(EXAMPLE), "--yes").exit_code == 0
    assert (
        cli(
            "environments", "create", "--tenant", "acme", "--name", "staging", "--size", "large"
        ).exit_code
        == 0
    )
    settle_sqlite(db_file)
    before = sha256_file(db_file)
    off = EXAMPLE.read_text().replace("defaultSize: large", "defaultSize: medium")
    path = write(off.replace("large:  { enabled: true, spares: 2 }", "large:  { enabled: false }"))
    assert cli("validate", "-f", path).exit_code == 0  # the document is fine; the state says no
    for args in (("plan",), ("apply", "--yes")):
        result = cli(*args, "-f", path)
        assert result.exit_code == 1
        assert (
            "Error [SIZE_IN_USE]: tenant acme: Size Large is in use: environment staging"
            in result.stdout
        )
    settle_sqlite(db_file)
    assert sha256_file(db_file) == before
