"""The README's tour of the CLI stays true: examples/tour.sh runs every command of it, in order,
on a fresh database, and every command the README shows is one the script runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "tour.sh"
NOT_RUN = ("(interactive)", "(daemon)")


def _normalized(command: str) -> str:
    command = command.replace('"', "").replace("${config[@]}", "")
    command = command.replace("$here/../", "").replace("$here/", "").replace("examples/", "")
    command = re.sub(r"http://127\.0\.0\.1:(\$port|\d+)", "URL", command)
    command = re.sub(r"--token (\$agent_token|bcf_…)", "--token TOKEN", command)
    command = re.sub(r" --json\b", "", command)
    return " ".join(command.split())


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    tour = text[text.index("## A tour of the CLI") : text.index("## The dashboard")]
    commands = []
    for line in tour.splitlines():
        if not line.startswith("    fleet ") or any(mark in line for mark in NOT_RUN):
            continue
        commands.append(_normalized(line.split("#", 1)[0]))
    return commands


def script_commands() -> set[str]:
    found = set()
    for line in SCRIPT.read_text().splitlines():
        for match in re.finditer(r"(?:^|\$\()fleet ([^|)]*)", line.strip()):
            found.add(_normalized("fleet " + match.group(1)))
    return found


def test_every_command_the_readme_shows_is_one_the_tour_runs() -> None:
    missing = [c for c in readme_commands() if c not in script_commands()]
    assert not missing, missing
    assert len(readme_commands()) > 60


@pytest.mark.slow
def test_the_tour_runs_to_the_end_on_a_fresh_database(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BCFLEET_")}
    env.update(FLEET=str(Path(sys.executable).parent / "fleet"), TOUR_DIR=str(tmp_path))
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("The tour ran to the end.")
    assert "Traceback" not in done.stderr
    assert "Apply complete! 1 adopted, 15 added" in done.stdout
    assert "reservation.preempting" in done.stdout
    assert "Service web deployed on Large" in done.stdout
