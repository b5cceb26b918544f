"""CLI start-up: each command run as a fresh process, min and median wall-clock seconds.

The demo fleet (`fleet demo --no-tui`, its default 50 hosts) is made once in a temporary
directory; then `fleet --help`, `fleet hosts list`, `fleet validate -f fleet.example.yaml`
and `fleet tenants list` each run --runs times after one warm-up, as cron or CI would run them.
Bytecode is cached (in the temporary directory, whatever PYTHONDONTWRITEBYTECODE says), as it is
for an installed package, so the figures are start-up and not compilation. Prints a JSON line
last.

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


def fleet(args: list[str], env: dict[str, str]) -> float:
    """Run `python -m bcfleet ARGS` to its end; its wall-clock seconds (a failure stops the bench)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bcfleet", *args],
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
        for name, argv in COMMANDS.items():
            fleet(argv, env)
            samples = [fleet(argv, env) for _ in range(args.runs)]
            results[name] = {
                "runs": len(samples),
                "minMs": round(min(samples) * 1000, 1),
                "medianMs": round(statistics.median(samples) * 1000, 1),
            }
    emit(results)


if __name__ == "__main__":
    main()
