"""Run one benchmark on two checkouts in alternating pairs and print each figure's ratio per pair.

On a shared machine the same code varies from run to run by more than the 5 % a change may
cost, so a figure is only compared with one measured beside it: the two checkouts run one
after the other, pair after pair (before first in even pairs, after first in odd ones), and
each figure's ratio is taken within its pair. The median of those ratios, and their range,
say whether a change moved a figure beyond the machine's own spread.

    python bench/side_by_side.py --before ../base --after . --pairs 3 -- bench/bench_tui.py

Each checkout runs the benchmark with its own interpreter (`<checkout>/.venv/bin/python`
when there is one, else this one) from its own folder. A figure is any number in the
benchmark's last JSON line (nested keys joined with dots). The last line printed here is one
JSON document: per figure, the medians before and after, the median ratio and its range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def interpreter(checkout: Path) -> str:
    """The checkout's own Python when it has a virtualenv, else the one running this."""
    own = checkout / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def figures(document: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number of a benchmark's JSON line by its dotted key (booleans are not figures)."""
    found: dict[str, float] = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found.update(figures(value, name + "."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            found[name] = float(value)
    return found


def last_json_line(output: str) -> dict[str, Any]:
    """The benchmark's figures: its last line that reads as a JSON object."""
    for line in reversed(output.strip().splitlines()):
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict):
            return document
    raise ValueError("the benchmark printed no JSON line")


def run_once(checkout: Path, command: Sequence[str], timeout: float) -> dict[str, float]:
    """One run of the benchmark in a checkout; its figures."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [interpreter(checkout), *command],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{checkout}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return figures(last_json_line(done.stdout))


def compare(pairs: Sequence[tuple[dict[str, float], dict[str, float]]]) -> dict[str, Any]:
    """Per figure present in every run: medians before and after, ratio per pair, its range."""
    names = set.intersection(*(set(b) & set(a) for b, a in pairs)) if pairs else set()
    out: dict[str, Any] = {}
    for name in sorted(names):
        befores = [b[name] for b, _ in pairs]
        afters = [a[name] for _, a in pairs]
        ratios = [a / b for b, a in zip(befores, afters, strict=True) if b]
        out[name] = {
            "before": statistics.median(befores),
            "after": statistics.median(afters),
            "ratio": round(statistics.median(ratios), 3) if ratios else None,
            "low": round(min(ratios), 3) if ratios else None,
            "high": round(max(ratios), 3) if ratios else None,
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout before")
    parser.add_argument("--after", type=Path, default=Path("."), help="the checkout after")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("command", nargs="+", help="the benchmark and its arguments, after --")
    args = parser.parse_args(argv)
    before, after = args.before.resolve(), args.after.resolve()
    pairs = []
    for index in range(args.pairs):
        order = [(before, 0), (after, 1)] if index % 2 == 0 else [(after, 1), (before, 0)]
        runs: list[dict[str, float]] = [{}, {}]
        for checkout, slot in order:
            runs[slot] = run_once(checkout, args.command, args.timeout)
        pairs.append((runs[0], runs[1]))
        print(f"pair {index + 1}/{args.pairs} done", file=sys.stderr)
    result = compare(pairs)
    width = max((len(n) for n in result), default=10)
    for name, row in result.items():
        print(f"{name:<{width}}  {row['before']:>12.4g}  {row['after']:>12.4g}  "
              f"×{row['ratio']} ({row['low']}–{row['high']})")  # fmt: skip
    print(json.dumps({"pairs": args.pairs, "command": args.command, "figures": result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
