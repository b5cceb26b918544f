"""CLI start-up: each command run as a fresh process, min and median wall-clock seconds.

The demo fleet (`fleet demo --no-tui`, its default 50 hosts) is made once in a temporary
directory; then `fleet --help`, `fleet hosts list`, `fleet validate -f fleet.example.yaml`
and `fleet tenants list` each run --runs times after one warm-up, as cron or CI would run them.
Two floors run the same way in the same run: the interpreter alone (`python -c pass`) and the
import of the libraries every command that reads the database needs (SQLAlchemy's ORM and
SQLModel); each such command's `overOrmFloorMs` is its median less that floor's, the part
bcfleet's own code can act on, comparable on a machine whose speed varies. Bytecode is cached
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
READS_NO_DATABASE = ("help",)  # imports no ORM: nothing to set against the ORM's floor
ORM_FLOOR = "import sqlalchemy.orm, sqlmodel"
FLOORS = {"python -c pass": ["-c", "pass"], ORM_FLOOR: ["-c", ORM_FLOOR]}


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
    floor = results[ORM_FLOOR]["medianMs"]
    for name in COMMANDS:
        if name in READS_NO_DATABASE:
            continue
        results[name]["overOrmFloorMs"] = round(results[name]["medianMs"] - floor, 1)
    emit(results)


if __name__ == "__main__":
    main()
