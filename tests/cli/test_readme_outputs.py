"""Each output the README's tour shows is what the command prints.

The tour is read as a user reads it: its `export` lines, its commands in order, ids captured
where a comment names them (`# $vm`) and put back where a later command uses them. A
`$ fleet …` line followed by indented lines is a shown output: the command's stdout and stderr
must be those lines, ids and times aside (`…` stands for any text). A comment naming XML
elements (`# <cputune>, <numatune>`) promises each of them in the output. The tour runs up to
its last shown output, in-process, in a folder of its own.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.fleet import run_cli

ROOT = Path(__file__).resolve().parents[2]
NOT_RUN = ("(interactive)", "(daemon)")
ID = re.compile(r"\b[a-z]{2,5}_[0-9a-z]{26}\b")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
ELEMENT = re.compile(r"<([a-z]+)>")


@dataclass
class Step:
    """One line of the tour: a command (with what it shows or promises), or an export."""

    command: str
    captures: str | None = None
    shown: list[str] | None = None
    elements: list[str] = field(default_factory=list)
    export: tuple[str, str] | None = None


def tour_steps() -> list[Step]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text[text.index("## A tour of the CLI") : text.index("## Run a real guest")]
    steps: list[Step] = []
    rows = lines.splitlines()
    for index, line in enumerate(rows):
        body, _, comment = line.partition("#")
        if line.startswith("    export "):
            name, _, value = body.split(None, 1)[1].strip().partition("=")
            steps.append(Step(command="", export=(name, value)))
        elif line.startswith("    $ fleet "):
            shown = []
            for following in rows[index + 1 :]:
                if not following.startswith("    ") or following.startswith("    $ "):
                    break
                shown.append(following[4:])
            steps.append(Step(command=line[6:].strip(), shown=shown))
        elif line.startswith("    fleet ") and not any(mark in line for mark in NOT_RUN):
            captured = re.match(r"\s*\$(\w+)", comment)
            steps.append(
                Step(
                    command=body.strip(),
                    captures=captured.group(1) if captured else None,
                    elements=ELEMENT.findall(comment.replace("><", "> <")),
                )
            )
    return steps


def normalized(text: str) -> str:
    return TIME.sub("TIME", ID.sub("ID", text)).rstrip()


def matches(shown: list[str], printed: str) -> bool:
    """Whether the printed text is the shown lines, ids and times aside, `…` any text."""
    pattern = ".*?".join(re.escape(part) for part in normalized("\n".join(shown)).split("…"))
    return re.fullmatch(pattern, normalized(printed), re.DOTALL) is not None


def test_the_tour_has_outputs_to_compare_and_exports_the_script_makes() -> None:
    steps = tour_steps()
    assert [s for s in steps if s.shown], "the README shows at least one output"
    assert [s for s in steps if s.elements], "the README promises elements of the libvirt spec"
    script = (ROOT / "examples" / "tour.sh").read_text(encoding="utf-8")
    for step in steps:
        if step.export is not None:
            name, value = step.export
            exported = re.search(rf"^export {name}=(\S+)", script, re.MULTILINE)
            assert exported is not None, f"examples/tour.sh exports {name}"
            assert exported.group(1).replace("$work/", "") == value


def test_each_output_the_readme_shows_is_what_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("BCFLEET_")]:
        monkeypatch.delenv(name)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "fleet.example.yaml").symlink_to(ROOT / "fleet.example.yaml")
    steps = tour_steps()
    last = max(i for i, s in enumerate(steps) if s.shown is not None or s.elements)
    ids: dict[str, str] = {}
    checked = []
    for step in steps[: last + 1]:
        if step.export is not None:
            monkeypatch.setenv(*step.export)
            continue
        command = re.sub(r"\$(\w+)", lambda m: ids[m.group(1)], step.command)
        args = shlex.split(command)[1:]
        if step.captures:
            made = run_cli(*args, "--json")
            assert made.exit_code == 0, (command, made.stderr)
            ids[step.captures] = str(made.json()["id"])  # type: ignore[index]
            continue
        result = run_cli(*args)
        if step.shown is not None:
            printed = result.stdout + result.stderr
            assert matches(step.shown, printed), (command, printed)
            checked.append(command)
            continue
        assert result.exit_code == 0, (command, result.stderr)
        for element in step.elements:
            assert f"<{element}" in result.stdout, (command, element)
            checked.append(f"{command} <{element}>")
    assert checked
