"""bench/side_by_side.py: alternating pairs of two checkouts, each figure's ratio taken within its pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.side_by_side import compare, figures, last_json_line, main

BENCH = """
import json, sys
from pathlib import Path
counter = Path("runs.txt")
runs = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(runs + 1))
print("warming up")
print(json.dumps({"speed": {"perSecond": SPEED + runs}, "ok": True, "name": "x"}))
"""


def checkout(tmp_path: Path, name: str, speed: int) -> Path:
    folder = tmp_path / name
    (folder / "bench").mkdir(parents=True)
    (folder / "bench" / "fake.py").write_text(BENCH.replace("SPEED", str(speed)))
    return folder


def test_figures_are_the_numbers_of_the_last_json_line() -> None:
    output = 'noise\n{"a": 1}\n{"p": {"p99Ms": 2.5, "ok": true}, "n": 3, "s": "x"}\ntrailing'
    assert figures(last_json_line(output)) == {"p.p99Ms": 2.5, "n": 3.0}
    with pytest.raises(ValueError, match="no JSON line"):
        last_json_line("nothing here\n")


def test_ratios_are_taken_within_each_pair() -> None:
    pairs = [({"x": 100.0}, {"x": 110.0}), ({"x": 200.0}, {"x": 200.0}), ({"x": 50.0}, {"x": 60.0})]
    assert compare(pairs)["x"] == {
        "before": 100.0,
        "after": 110.0,
        "ratio": 1.1,
        "low": 1.0,
        "high": 1.2,
    }


def test_two_checkouts_run_alternately(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = checkout(tmp_path, "before", 100), checkout(tmp_path, "after", 150)
    assert main(["--before", str(before), "--after", str(after), "--pairs", "3",
                 "bench/fake.py"]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # each checkout ran three times in its own folder, its figure counting its own runs
    assert (before / "runs.txt").read_text() == (after / "runs.txt").read_text() == "3"
    assert result["figures"]["speed.perSecond"]["before"] == 101
    assert result["figures"]["speed.perSecond"]["after"] == 151
    assert list(result["figures"]) == ["speed.perSecond"]


def test_a_failing_benchmark_is_reported(tmp_path: Path) -> None:
    before = checkout(tmp_path, "before", 1)
    (before / "bench" / "fake.py").write_text("raise SystemExit('broken')")
    with pytest.raises(RuntimeError, match="exit 1"):
        main(["--before", str(before), "--after", str(before), "--pairs", "1", "bench/fake.py"])
