"""The six jobs of PRODUCT.md §7: names, default intervals, and their functions imported lazily by dotted path.

A job whose module is not there yet (another area writes it) loads as None:
the runner reports it skipped, 'not available', and never crashes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from typing import TYPE_CHECKING

from bcfleet.errors import NotFoundError
from bcfleet.settings import FleetSettings

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

JobFunction = Callable[["JobHandle", datetime], dict[str, int]]
"""run_x(fleet, now) -> counts."""


@dataclass(frozen=True)
class JobSpec:
    name: str
    target: str  # "package.module:function"
    default_interval: float  # seconds
    description: str

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def function(self) -> str:
        return self.target.partition(":")[2]

    def load(self) -> JobFunction | None:
        """The job function, or None when its module or function does not exist (yet)."""
        try:
            module = import_module(self.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and self.module.startswith(exc.name):
                return None  # the job's own module (or its package) is missing
            raise  # a dependency of an existing module is missing: that is an error
        function = getattr(module, self.function, None)
        return function if callable(function) else None

    def interval(self, settings: FleetSettings) -> float:
        """Seconds between runs: settings.job_intervals (fleet.toml [jobs]) or the default."""
        return float(settings.job_intervals.get(self.name, self.default_interval))


JOBS: tuple[JobSpec, ...] = (
    JobSpec(
        "vps.hosts",
        "bcfleet.jobs.vps_hosts:run_vps_hosts",
        30.0,
        "derive node_resources rows from inventories",
    ),
    JobSpec("vps.usage", "bcfleet.jobs.vps_usage:run_vps_usage", 300.0, "write usage windows"),
    JobSpec(
        "reservations.retry",
        "bcfleet.jobs.reservations:run_retry",
        30.0,
        "retry pending reservations, preempting for regular ones",
    ),
    JobSpec(
        "reservations.lifecycle",
        "bcfleet.jobs.reservations:run_lifecycle",
        10.0,
        "activate, cut back, release at during.end or the deadline",
    ),
    JobSpec("spares", "bcfleet.jobs.spares:run_spares", 30.0, "keep each enabled size's spares"),
    JobSpec(
        "providers.reconcile",
        "bcfleet.jobs.providers:run_reconcile",
        60.0,
        "create and delete provider servers",
    ),
    JobSpec("webhooks", "bcfleet.jobs.webhooks:run_webhooks", 10.0, "deliver events to webhooks"),
)

_BY_NAME = {spec.name: spec for spec in JOBS}


def job_names() -> tuple[str, ...]:
    return tuple(spec.name for spec in JOBS)


def get_job(name: str) -> JobSpec:
    """The job of that name; NOT_FOUND naming the known jobs otherwise."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise NotFoundError(f"no job named {name!r}", {"job": name, "jobs": list(job_names())})
    return spec
