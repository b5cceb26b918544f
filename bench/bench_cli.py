"""CLI start-up: each command run as a fresh process, min and median wall-clock seconds.

The demo fleet (`fleet demo --no-tui`, its default 50 hosts) is made once in a temporary
directory; then `fleet --help`, `fleet hosts list`, `fleet validate -f fleet.example.yaml`
and `fleet tenants list` each run --runs times after one warm-up, as cron or CI would run them.
Three floors run the same way in the same run: the interpreter alone (`python -c pass`), the
import of what a read on Core alone needs (click, SQLAlchemy Core and its SQLite dialect), and
the import of what every other command that reads the database needs (SQLAlchemy's ORM and
SQLModel). `fleet hosts list` reads on Core alone: its `overCoreFloorMs` is its median less the
Core floor's; each other such command's `overOrmFloorMs` is its median less the ORM floor's:
the part bcfleet's own code can act on, comparable on a machine whose speed varies. Bytecode is cached
(in the temporary directory, whatever PYTHONDONTWRITEBYTECODE says), as it is for an installed
package, so the figures are start-up and not compilation. Prints a JSON line last.

    python bench/bench_cli.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import emit  # noqa: E402

COMMANDS = {
    "help": ["--help"],
    "hosts list": ["hosts", "list"],
    "validate": ["validate", "-f", str(ROOT / "fleet.example.yaml")],
    "tenants list": ["tenants", "list"],
}
READS_NO_DATABASE = ("help", "validate")  # no SQLAlchemy at all: no database floor to set against
READS_ON_CORE = (
    "hosts list",
)  # imports neither SQLModel nor the ORM (tests/cli/test_cli_startup.py)
CORE_FLOOR = "import click, sqlalchemy.dialects.sqlite"
ORM_FLOOR = "import sqlalchemy.orm, sqlmodel"
FLOORS = {
    "python -c pass": ["-c", "pass"],
    CORE_FLOOR: ["-c", CORE_FLOOR],
    ORM_FLOOR: ["-c", ORM_FLOOR],
}


def fleet(args: list[str], env: dict[str, str]) -> float:
    """Run `python -m bcfleet ARGS` to its end; its wall-clock seconds (a failure stops the bench)."""
    return python(["-m", "bcfleet", *args], env)


def python(args: list[str], env: dict[str, str]) -> float:
    """Run `python ARGS` to its end; its wall-clock seconds (a failure stops the bench)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *args],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "BCFLEET_DB": f"sqlite:///{tmp}/fleet.db",
            "PYTHONPYCACHEPREFIX": f"{tmp}/pycache",
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        fleet(["demo", "--no-tui"], env)
        runs = [(name, ["-m", "bcfleet", *argv]) for name, argv in COMMANDS.items()]
        for name, argv in [*FLOORS.items(), *runs]:
            python(argv, env)
            samples = [python(argv, env) for _ in range(args.runs)]
            results[name] = {
                "runs": len(samples),
                "minMs": round(min(samples) * 1000, 1),
                "medianMs": round(statistics.median(samples) * 1000, 1),
            }
    for name in COMMANDS:
        if name in READS_NO_DATABASE:
            continue
        on_core = name in READS_ON_CORE
        floor = results[CORE_FLOOR if on_core else ORM_FLOOR]["medianMs"]
        key = "overCoreFloorMs" if on_core else "overOrmFloorMs"
        results[name][key] = round(results[name]["medianMs"] - floor, 1)
    emit(results)


if __name__ == "__main__":
    main()
