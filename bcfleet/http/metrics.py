"""Prometheus metrics of `fleet serve`, in the text exposition format, written by hand.

Request counts and a latency histogram per route template come from this process. Their
labels come from closed sets only (a declared method or `other`, a route template or
`unmatched`, a status class), so no caller can add a series. The
fleet's counters come from what every process sharing the database recorded: placements,
preemptions and events by type from the event log (EventTally, by cursor), job runs from
the jobs' run records (JobRunTally). A background task of the server tallies them; no
request ever reads them with more than its own token.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# The methods a request series may name; any other token uvicorn accepts counts as "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"  # every path no route template matched


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


def status_label(status: int) -> str:
    """The status class: 2xx, 4xx, ...; anything outside 100-599 is "other"."""
    return f"{status // 100}xx" if 100 <= status <= 599 else "other"


# Fleet counters: each sums the events of the listed types.
FLEET_COUNTERS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "bcfleet_placements_total": (
        "Instances and reservations placed on hosts (instance.placed, reservation.placed).",
        ("instance.placed", "reservation.placed"),
    ),
    "bcfleet_preemptions_total": (
        "Reservations preempted: cut back at a deadline or requeued.",
        ("reservation.preempting", "reservation.preempted"),
    ),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


@dataclass
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))
    total: float = 0.0
    count: int = 0


class Metrics:
    """Thread-safe counters and histograms of one server process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = {}
        self._latency: dict[tuple[str, str], _Histogram] = {}
        self.events_by_type: dict[str, int] = {}
        self.job_runs: dict[tuple[str, str], int] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one finished request and its latency; route is a template or UNMATCHED_ROUTE."""
        method = method_label(method)
        with self._lock:
            key = (method, route, status_label(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            hist = self._latency.setdefault((method, route), _Histogram())
            index = bisect.bisect_left(LATENCY_BUCKETS, seconds)
            for i in range(index, len(LATENCY_BUCKETS)):
                hist.counts[i] += 1
            hist.total += seconds
            hist.count += 1

    def add_events(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            for event_type, n in counts.items():
                self.events_by_type[event_type] = self.events_by_type.get(event_type, 0) + n

    def add_job_runs(self, counts: Mapping[tuple[str, str], int]) -> None:
        with self._lock:
            for key, n in counts.items():
                self.job_runs[key] = self.job_runs.get(key, 0) + n

    def render(self) -> str:
        """The whole exposition, ending in a newline."""
        with self._lock:
            requests = dict(self._requests)
            latency = {k: (list(v.counts), v.total, v.count) for k, v in self._latency.items()}
            events = dict(self.events_by_type)
            runs = dict(self.job_runs)
        lines: list[str] = []
        lines += _fleet_lines(events)
        lines += _job_lines(runs)
        lines += [
            "# HELP bcfleet_http_requests_total HTTP requests by method, route and status class.",
            "# TYPE bcfleet_http_requests_total counter",
        ]
        for (method, route, status), n in sorted(requests.items()):
            labels = _labels([("method", method), ("route", route), ("status", status)])
            lines.append(f"bcfleet_http_requests_total{labels} {n}")
        lines += _latency_lines(latency)
        return "\n".join(lines) + "\n"


def _fleet_lines(events: Mapping[str, int]) -> list[str]:
    lines: list[str] = []
    for name, (help_text, types) in FLEET_COUNTERS.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
        lines.append(f"{name} {sum(events.get(t, 0) for t in types)}")
    lines += [
        "# HELP bcfleet_events_total Events in the fleet's log by type.",
        "# TYPE bcfleet_events_total counter",
    ]
    for event_type, n in sorted(events.items()):
        lines.append(f"bcfleet_events_total{_labels([('type', event_type)])} {n}")
    return lines


def _job_lines(runs: Mapping[tuple[str, str], int]) -> list[str]:
    name = "bcfleet_job_runs_total"
    lines = [f"# HELP {name} Recorded runs of scheduled jobs by job and outcome.",
             f"# TYPE {name} counter"]  # fmt: skip
    for (job, outcome), n in sorted(runs.items()):
        lines.append(f"{name}{_labels([('job', job), ('outcome', outcome)])} {n}")
    return lines


def _latency_lines(latency: Mapping[tuple[str, str], tuple[list[int], float, int]]) -> list[str]:
    name = "bcfleet_http_request_duration_seconds"
    lines = [f"# HELP {name} HTTP request latency by method and route.", f"# TYPE {name} histogram"]
    for (method, route), (counts, total, count) in sorted(latency.items()):
        base = [("method", method), ("route", route)]
        for bound, n in zip(LATENCY_BUCKETS, counts, strict=True):
            lines.append(f"{name}_bucket{_labels([*base, ('le', repr(bound))])} {n}")
        lines.append(f"{name}_bucket{_labels([*base, ('le', '+Inf')])} {count}")
        lines.append(f"{name}_sum{_labels(base)} {total:.6f}")
        lines.append(f"{name}_count{_labels(base)} {count}")
    return lines


PageReader = Callable[[int | None], Mapping[str, Any]]
RunsReader = Callable[[int], Sequence[Mapping[str, Any]]]


class EventTally:
    """Counts the event log by type, page by page from a cursor; read_page(after) lists a page."""

    def __init__(self, metrics: Metrics, read_page: PageReader, *, max_pages: int = 50) -> None:
        self.metrics = metrics
        self.read_page = read_page
        self.max_pages = max_pages
        self.cursor: int | None = None

    def collect(self) -> int:
        """Tally the events after the cursor (at most max_pages pages); returns how many."""
        seen = 0
        for _ in range(self.max_pages):
            page = self.read_page(self.cursor)
            counts: dict[str, int] = {}
            for item in page["items"]:
                counts[item["type"]] = counts.get(item["type"], 0) + 1
            self.metrics.add_events(counts)
            seen += len(page["items"])
            self.cursor = page["cursor"]
            if len(page["items"]) < 1000:
                break
        return seen


class JobRunTally:
    """Counts recorded job runs by job and outcome; read_runs(limit) lists the newest runs.

    Runs are recognised by id, so a run is counted once however often it is listed; a
    round that lists only runs already counted reads no more. At most `limit` new runs
    are counted per round (runs are kept a week, so a first round starts from recent ones).
    """

    def __init__(self, metrics: Metrics, read_runs: RunsReader, *, limit: int = 500) -> None:
        self.metrics = metrics
        self.read_runs = read_runs
        self.limit = limit
        self.seen: set[str] = set()

    def collect(self) -> int:
        runs = [r for r in self.read_runs(self.limit) if r.get("id")]
        counts: dict[tuple[str, str], int] = {}
        for run in runs:
            if run["id"] not in self.seen:
                key = (str(run["job"]), str(run["outcome"]))
                counts[key] = counts.get(key, 0) + 1
        self.metrics.add_job_runs(counts)
        self.seen = {str(r["id"]) for r in runs}
        return sum(counts.values())
