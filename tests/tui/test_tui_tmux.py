"""The console in a real terminal (tmux, 80×24), as an operator drives it: `n` makes a flavor,
`e` edits it, ctrl+d deletes it, and the CLI sees each change.

$EDITOR is a small script standing in for the operator at the editor. tmux is installed
in CI (scripts/libvirt-host), where this test runs rather than skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fleet import run_cli
from tests.support.tui import build_fleet

EDITOR = """\
import pathlib, sys
path = pathlib.Path(sys.argv[1])
text = path.read_text()
if "name: new-flavor" in text:
    text = text.replace("name: new-flavor", "name: tmux-made")
else:
    text = text.replace("vcpu: 2", "vcpu: 3")
path.write_text(text)
"""
WAIT = 15.0


class Terminal:
    """One tmux session on a private server: keys in, the screen's text out."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket, self.session = socket, session

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-t", self.session)

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Terminal, Path]]:
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is missing: scripts/libvirt-host installs it in CI")
        pytest.skip("tmux is not installed")
    database = build_fleet(tmp_path)
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    socket = f"bcfleet-test-{uuid.uuid4().hex[:8]}"
    term = Terminal(socket, "console")
    command = (
        f"EDITOR='{sys.executable} {editor}' {sys.executable} -m bcfleet tui "
        f"--db sqlite:///{database} --refresh 0"
    )
    term.tmux("new-session", "-d", "-s", "console", "-x", "80", "-y", "24", command)
    try:
        yield term, database
    finally:
        term.tmux("kill-server")


def cli_flavors(database: Path) -> dict[str, int]:
    """`fleet flavors list --json` for vps-ams: each flavor's vCPUs by name."""
    done = run_cli("flavors", "list", "--tenant", "root", "--pool", "vps-ams", "--json",
                   db=f"sqlite:///{database}")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    return {f["name"]: f["vcpu"] for f in json.loads(done.stdout)["items"]}


def test_n_makes_a_flavor_e_edits_it_ctrl_d_deletes_it(terminal: tuple[Terminal, Path]) -> None:
    term, database = terminal
    term.wait_for("Hosts")
    term.keys(":flavors", "Enter")
    term.wait_for("g1.small")
    term.keys("/", "vps-ams g1.small", "Enter")  # the cursor on a vps-ams row: n names its pool
    term.wait_for("1 of ")
    term.keys("n")
    term.wait_for("Apply this plan?")
    term.keys("y")
    term.wait_for("Apply complete! 1 added")
    assert cli_flavors(database)["tmux-made"] == 2

    term.keys("Escape")  # alone: Esc and the next key in one read would be Alt+key
    term.wait_for("\n9 flavors")  # the whole list again
    term.keys("/", "tmux-made", "Enter")
    term.wait_for("1 of 9 flavors")
    term.keys("e")
    shown = term.wait_for("Apply this plan?")
    assert "vcpu = 2 -> 3" in shown
    term.keys("y")
    term.wait_for("1 changed")
    assert cli_flavors(database)["tmux-made"] == 3

    term.keys("C-d")
    term.wait_for("Delete flavor vps-ams/tmux-made?")
    term.keys("y")
    term.wait_for("tmux-made is deleted")
    assert "tmux-made" not in cli_flavors(database)
    term.keys("q")
