"""`fleet plan`, `fleet apply` and `fleet force-unlock`: FleetConfig on the CLI (`fleet validate` is cli/validate.py).

Exit codes (PRODUCT.md §5): 0 success (for `plan --detailed-exitcode`: no
changes), 1 error, 2 the plan has changes (with `--detailed-exitcode`), 3 the
apply lock is held, 4 a saved plan is stale, 64 usage. A failed validate, plan
or apply leaves the database as it was: the document and the plan are checked
before the apply lock is taken.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import threading

import click

from bcfleet.cli.common import common_options, output, print_json, state
from bcfleet.cli.validate import load_or_exit
from bcfleet.domain.bounds import seconds_problem
from bcfleet.domain.durations import parse_duration
from bcfleet.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.reconcile.actions import Plan
from bcfleet.reconcile.apply import (
    ApplyResult,
    Approved,
    StepHook,
    apply,
    apply_held,
    make_plan,
    plan_json,
)
from bcfleet.reconcile.load import read_fleetconfig
from bcfleet.reconcile.lock import Lease, freed, held
from bcfleet.reconcile.lock import force_unlock as unlock
from bcfleet.reconcile.model import DesiredFleet
from bcfleet.reconcile.render import NO_CHANGES, render_json_text, render_text
from bcfleet.reconcile.saved import approved_from, read_plan, save_plan
from bcfleet.settings import load_fleet_settings

PROMPT = (
    "\nDo you want to perform these actions?\n"
    "  bcfleet will perform the actions described above.\n"
    "  Only 'yes' will be accepted to approve.\n\n"
    "  Enter a value"
)
PAUSE_ENV = "BCFLEET_APPLY_PAUSE"  # "N:SECONDS": pause after the Nth action (tests, demos)
PAUSE_STEP = 0.05


@click.command("plan")
@click.option("-f", "--file", "file", required=True, metavar="FILE", help="The FleetConfig.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Save the plan for `fleet apply` (never over the database or any SQLite file).",
)
@click.option("--force", is_flag=True, help="With --out: replace a file that is not a saved plan.")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 no changes, 2 changes, 1 error.")
@click.option("--allow-empty", is_flag=True, help="Allow removing every managed object.")
@common_options
def plan_(
    file: str, out: str | None, force: bool, detailed_exitcode: bool, allow_empty: bool
) -> int:
    """Show what `fleet apply` would change; writes nothing to the state."""
    desired = load_or_exit(file)
    s = state()
    result = make_plan(s.fleet, s.credential, desired, allow_empty=allow_empty)
    if out is not None and not result.errors:  # saved first: a failed save prints only its error
        text = read_fleetconfig(file)  # as the loader read it, within its limits
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != desired.digest:
            raise InvalidInputError(f"{file} changed while it was planned: plan again")
        save_plan(
            out,
            result,
            file=file,
            text=text,
            allow_empty=allow_empty,
            database_url=s.db or load_fleet_settings().db_url,
            force=force,
        )
    if s.json:
        click.echo(render_json_text(result), nl=False)
    else:
        click.echo(render_text(result), nl=False)
    if result.errors:
        return EXIT_ERROR
    if out is not None and not s.json:
        click.echo(f"\nSaved the plan to: {out}\n\nTo perform exactly these actions, run:")
        click.echo(f"  fleet apply {out}")
    return EXIT_CHANGES if detailed_exitcode and result.has_changes else EXIT_OK


def _lock_timeout(text: str) -> float:
    """Seconds from `0`, `30`, `30s`, `5m`, `1h` …; a usage error otherwise."""
    stripped = text.strip().lower()
    if stripped in ("0", "0s"):
        return 0.0
    try:
        seconds = float(stripped)
    except ValueError:
        try:
            seconds = parse_duration(stripped, field="--lock-timeout").total_seconds()
        except InvalidInputError as error:
            raise click.BadParameter(error.message, param_hint="--lock-timeout") from None
    problem = seconds_problem("--lock-timeout", seconds)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="--lock-timeout")
    return seconds


def _pause_hook(fleet: Fleet) -> StepHook | None:
    """BCFLEET_APPLY_PAUSE=N:SECONDS pauses inside the transaction once N actions are done, for
    SECONDS or until the process gets SIGUSR1."""
    raw = os.environ.get(PAUSE_ENV, "")
    if not raw:
        return None
    after, _, seconds = raw.partition(":")
    paused: list[int] = []

    def pause(done: int) -> None:
        if done >= int(after) and not paused:
            paused.append(done)
            resumed = threading.Event()
            previous = signal.signal(signal.SIGUSR1, lambda *_: resumed.set())
            try:
                click.echo(f"apply: paused after {done} actions ({PAUSE_ENV})", err=True)
                sys.stderr.flush()
                for _ in range(round(float(seconds or 60) / PAUSE_STEP)):
                    if resumed.is_set():
                        break
                    fleet.clock.sleep(PAUSE_STEP)
            finally:
                signal.signal(signal.SIGUSR1, previous)

    return pause


def _approve() -> None:
    """The terminal's prompt; anything but 'yes' cancels."""
    answer = click.prompt(PROMPT, default="", show_default=False, prompt_suffix=": ")
    if answer.strip() != "yes":
        click.echo("\nApply cancelled.", err=True)
        sys.exit(EXIT_ERROR)


def _usage(message: str) -> None:
    raise click.UsageError(message)


def _stdin_is_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


@click.command("apply")
@click.argument("plan_file", required=False, metavar="[PLAN.json]")
@click.option("-f", "--file", "file", metavar="FILE", help="The FleetConfig to plan and apply.")
@click.option("--yes", "auto_approve", is_flag=True, help="Apply without asking (CI, cron).")
@click.option("--allow-empty", is_flag=True, help="Allow removing every managed object.")
@click.option(
    "--lock-timeout",
    default="0s",
    show_default=True,
    metavar="DURATION",
    help="How long to wait for another apply's lock (e.g. 30s, 5m) before exiting 3.",
)
@common_options
def apply_(
    plan_file: str | None,
    file: str | None,
    auto_approve: bool,
    allow_empty: bool,
    lock_timeout: str,
) -> int:
    """Make the state match a FleetConfig (-f, after a prompt or --yes) or a saved plan."""
    timeout = _lock_timeout(lock_timeout)
    if (plan_file is None) == (file is None):
        _usage("give either -f FILE or a saved plan (fleet apply PLAN.json), not both")
    if file is not None and not auto_approve and (state().json or not _stdin_is_terminal()):
        _usage(
            "fleet apply -f asks for approval on a terminal; without one (CI, cron) pass --yes, "
            "or save a plan with `fleet plan -f FILE --out plan.json` and run `fleet apply plan.json`"
        )
    s = state()
    operation = f"apply {plan_file or file}"
    if plan_file is not None:
        saved = _approved_saved(plan_file)  # read before the fleet is opened (or created)
        result = apply(
            s.fleet,
            s.credential,
            saved,
            lock_timeout=timeout,
            operation=operation,
            between=_pause_hook(s.fleet),
            on_wait=_say_waiting,
        )
        _report(result)
        return EXIT_OK
    assert file is not None
    desired = load_or_exit(file)
    if not _worth_locking(desired, allow_empty=allow_empty):
        return EXIT_OK
    # As Terraform does: take the lock, then plan, show and ask; apply exactly what was shown
    # under the same lock (renewed while the prompt waits), so no other apply runs meanwhile.
    with held(s.fleet, operation=operation, timeout=timeout, on_wait=_say_waiting) as lock:
        approved = _approved_config(desired, allow_empty=allow_empty, auto_approve=auto_approve)
        if approved is None:
            return EXIT_OK
        result = apply_held(s.fleet, s.credential, approved, lock, _pause_hook(s.fleet))
    _report(result)
    return EXIT_OK


def _say_waiting(holder: Lease, timeout: float) -> None:
    """Say on stderr whose lock an apply waits for, as Terraform says it is acquiring its lock."""
    click.echo(
        f"Waiting up to {timeout:g}s for the {holder.name} lock held by {holder.holder} "
        f"(pid {holder.pid}, {holder.operation})...",
        err=True,
    )
    sys.stderr.flush()


def _ends_here(result: Plan) -> bool:
    """Show a plan that has errors (exit 1) or no changes (True); False when it has changes."""
    s = state()
    if not result.errors and result.has_changes:
        return False
    if not s.json:
        click.echo(render_text(result), nl=False)
    if result.errors:
        if s.json:
            click.echo(render_json_text(result), nl=False)
        sys.exit(EXIT_ERROR)
    if s.json:
        print_json({"applied": False, "message": NO_CHANGES, "plan": plan_json(result)})
    return True


def _worth_locking(desired: DesiredFleet, *, allow_empty: bool) -> bool:
    """A first plan, without the lock: a document that plans with errors or without changes
    ends here, writing nothing, not even the lock's row."""
    s = state()
    return not _ends_here(make_plan(s.fleet, s.credential, desired, allow_empty=allow_empty))


def _approved_config(
    desired: DesiredFleet, *, allow_empty: bool, auto_approve: bool
) -> Approved | None:
    """Under the lock: plan, show, ask; None when there is nothing to do."""
    s = state()
    result = make_plan(s.fleet, s.credential, desired, allow_empty=allow_empty)
    if _ends_here(result):
        return None
    if not s.json:
        click.echo(render_text(result), nl=False)
    if not auto_approve:
        _approve()
    return Approved(desired, plan_json(result), allow_empty=allow_empty, auto_approve=auto_approve)


def _approved_saved(plan_file: str) -> Approved:
    saved = read_plan(plan_file)
    if not state().json:
        click.echo(f"Applying the saved plan {plan_file} (state revision {saved.state_revision}).")
    return approved_from(saved, host_reserve=load_fleet_settings().host_reserve)


def _report(result: ApplyResult) -> None:
    if state().json:
        print_json(result.to_json())
        return
    if result.replanned:
        click.echo("\nThe state changed while waiting; this is the plan made under the lock:\n")
        click.echo(render_text(result.plan), nl=False)
    for warning in result.warnings:
        click.echo(f"\nWarning: {warning}")
    click.echo(f"\n{result.message}")


@click.command("force-unlock")
@click.argument("lock_id")
@common_options
def force_unlock(lock_id: str) -> int:
    """Remove the lock LOCK_ID (the apply lock or a job's lease) whose holder is gone.

    The id is in the LOCKED error and in `fleet jobs list --json` (heldBy.lockId).
    """
    s = state()
    info = unlock(s.fleet, s.credential, lock_id)
    output(
        {"unlocked": True, "lock": info.to_json()},
        lambda _: (
            f"Lock {info.id} of {info.holder} (pid {info.pid}, {info.operation}) removed: "
            f"{freed(info)}."
        ),
    )
    return EXIT_OK


commands = [plan_, apply_, force_unlock]
