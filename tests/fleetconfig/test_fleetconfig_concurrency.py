"""Applies as separate processes on SQLite and PostgreSQL: the lock, stale saved plans, and a
process killed in the middle of an apply.

`BCFLEET_APPLY_PAUSE=N:SECONDS` makes an apply pause inside its transaction after its Nth
action and say so on stderr, so a test can act while it holds the lock; SIGUSR1 ends the pause.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.fleet import python_cli, run_cli
from tests.support.fleetconfig import BASE, CHANGED, ROOT, dump

pytestmark = pytest.mark.slow


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("BCFLEET_NOW", "BCFLEET_TOKEN")}
    return {**base, **extra}


def run(*args: str, db: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """A command the test waits for, run in this process (its own process proves nothing here
    and costs a second of imports); the applies that must be other processes use `start`."""
    hidden = {k: os.environ.pop(k) for k in ("BCFLEET_NOW", "BCFLEET_TOKEN") if k in os.environ}
    try:
        done = run_cli(*args, db=db, env=extra)
    finally:
        os.environ.update(hidden)
    return subprocess.CompletedProcess(list(args), done.exit_code, done.stdout, done.stderr)


def start(*args: str, db: str, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        python_cli(*args, db=db),
        cwd=ROOT,
        env=env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(process: subprocess.Popen[str], text: str) -> None:
    """Read the process's stderr until a line says `text`."""
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"never said {text!r}: {''.join(seen)}")


def wait_for_pause(process: subprocess.Popen[str]) -> None:
    """Read stderr until the apply says it paused (inside its transaction, holding the lock)."""
    wait_for_line(process, "apply: paused after")


@pytest.fixture
def docs(tmp_path: Path) -> tuple[str, str]:
    base, changed = tmp_path / "base.yaml", tmp_path / "changed.yaml"
    base.write_text(BASE)
    changed.write_text(CHANGED)
    return str(base), str(changed)


def test_two_applies_at_once_one_is_locked_and_one_waits(
    db_url: str, docs: tuple[str, str]
) -> None:
    base, _ = docs
    first = start("apply", "-f", base, "--yes", db=db_url, BCFLEET_APPLY_PAUSE="3:100")
    wait_for_pause(first)
    waiter = start("apply", "-f", base, "--yes", "--lock-timeout", "90s", db=db_url)
    wait_for_line(waiter, "Waiting up to 90s for the apply lock held by ")
    locked = run("apply", "-f", base, "--yes", "--json", db=db_url)
    assert locked.returncode == 3, locked.stderr
    error = json.loads(locked.stdout)["error"]
    assert error["code"] == "LOCKED" and error["details"]["lock"]["pid"] == first.pid
    first.send_signal(signal.SIGUSR1)  # the waiter is waiting: let the first apply finish
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "Apply complete! 1 adopted, 14 added, 0 changed, 0 deleted." in out
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    # it planned again once it held the lock, as Terraform does: nothing left to change
    assert "No changes." in out and "Apply complete" not in out
    assert run("plan", "-f", base, "--detailed-exitcode", db=db_url).returncode == 0


def test_a_stale_saved_plan_is_refused(db_url: str, docs: tuple[str, str], tmp_path: Path) -> None:
    base, changed = docs
    empty_plan, later = str(tmp_path / "empty.json"), str(tmp_path / "later.json")
    assert run("plan", "-f", base, "--out", empty_plan, db=db_url).returncode == 0
    assert run("apply", empty_plan, db=db_url).returncode == 0
    again = run("apply", empty_plan, db=db_url)
    assert again.returncode == 4 and "STALE_PLAN" in again.stderr
    assert run("plan", "-f", changed, "--out", later, db=db_url).returncode == 0
    assert run("tenants", "create", "globex", db=db_url).returncode == 0  # touches nothing planned
    quota = ("quotas", "set", "--tenant", "acme", "--pool", "hetzner-fsn", "--vcpu", "20")
    assert run(*quota, "--memory-gib", "64", db=db_url).returncode == 0  # a before-value planned
    stale = run("apply", later, db=db_url)
    assert stale.returncode == 4 and "quota.acme.hetzner-fsn" in stale.stderr, stale.stderr


def test_a_process_killed_mid_apply_leaves_the_state_as_it_was(
    db_url: str, docs: tuple[str, str]
) -> None:
    base, changed = docs
    assert run("apply", "-f", base, "--yes", db=db_url).returncode == 0
    before = dump(db_url, skip=("locks",))
    victim = start("apply", "-f", changed, "--yes", db=db_url, BCFLEET_APPLY_PAUSE="4:120")
    wait_for_pause(victim)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert dump(db_url, skip=("locks",)) == before
    locked = run("apply", "-f", changed, "--yes", "--json", db=db_url)
    assert locked.returncode == 3
    held = json.loads(locked.stdout)["error"]
    assert f"process {victim.pid} is not running on this host" in held["message"]
    assert run("force-unlock", held["details"]["lock"]["id"], db=db_url).returncode == 0
    done = run("apply", "-f", changed, "--yes", db=db_url)
    assert done.returncode == 0 and "1 added, 5 changed, 2 deleted." in done.stdout
    assert run("plan", "-f", changed, "--detailed-exitcode", db=db_url).returncode == 0


def start_at_prompt(file: str, db: str, **extra: str) -> tuple[subprocess.Popen[str], int]:
    """An interactive `fleet apply -f` on a terminal, stopped at its prompt: (process, terminal)."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        python_cli("apply", "-f", file, db=db),
        cwd=ROOT,
        env=env(**extra),
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(secondary)
    assert process.stdout is not None
    shown = ""
    while "Enter a value" not in shown:
        char = process.stdout.read(1)
        if not char:
            pytest.fail(f"no prompt: {shown}{process.stderr.read() if process.stderr else ''}")
        shown += char
    return process, primary


def test_an_apply_waiting_at_its_prompt_holds_the_lock(db_url: str, docs: tuple[str, str]) -> None:
    """Terraform's order: lock, plan, show, ask, apply. While the operator reads the plan, a
    second apply gets LOCKED; the lock is renewed (TTL 1 s here) however long the prompt waits."""
    base, changed = docs
    first, terminal = start_at_prompt(base, db_url, BCFLEET_LOCK_TTL_SECONDS="1")
    time.sleep(3)  # three TTLs at the prompt
    locked = run("apply", "-f", changed, "--yes", "--json", db=db_url)
    assert locked.returncode == 3, locked.stdout + locked.stderr
    assert json.loads(locked.stdout)["error"]["details"]["lock"]["pid"] == first.pid
    os.write(terminal, b"yes\n")
    out, err = first.communicate(timeout=120)
    os.close(terminal)
    assert first.returncode == 0, err
    assert "Apply complete! 1 adopted, 14 added, 0 changed, 0 deleted." in out
    assert run("plan", "-f", base, "--detailed-exitcode", db=db_url).returncode == 0


def test_a_killed_apply_frees_its_lock_one_ttl_later(db_url: str, docs: tuple[str, str]) -> None:
    """The holder renews its lock while it lives; killed, it stops, and the lock runs out
    (here after 2 s; by default 30 s) with no force-unlock."""
    base, _ = docs
    ttl = {"BCFLEET_LOCK_TTL_SECONDS": "2"}
    victim, terminal = start_at_prompt(base, db_url, **ttl)
    time.sleep(3)  # renewed past its first TTL while alive
    assert run("apply", "-f", base, "--yes", db=db_url, **ttl).returncode == 3
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    os.close(terminal)
    started = time.monotonic()
    done = run("apply", "-f", base, "--yes", "--lock-timeout", "30s", db=db_url, **ttl)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 15  # well within a minute
