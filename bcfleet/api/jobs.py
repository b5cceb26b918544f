"""The jobs area: what each job did and when it is due, run one now, one tick, the scheduler daemon.

The edges (CLI, dashboard, HTTP) reach the jobs of PRODUCT.md §7 only through here. Reading is
`compute:jobs:read` on root's tenant (root's principals; a root-only action, so never another
tenant's); running is `compute:jobs:run` there (root's admin: no member or viewer role has it).

A run is not one API call: a job makes its own transactions, under its lease
(bcfleet/jobs/runner.py). So this area is not an `Area`: its calls are never run twice after
a lost connection; only the reads go through Fleet.run_call().
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from bcfleet.api.auth import Credential, authenticate, tenant_resource
from bcfleet.api.documents import JobJson, JobPageJson
from bcfleet.domain.job_documents import JobRunJson, JobStatusJson
from bcfleet.domain.pages import JOB_RUNS
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.jobs import registry, runner, scheduler, stop

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

Runs = list[JobRunJson]  # (aliases: the class below has a method named list)
Statuses = list[JobStatusJson]
READ = "compute:jobs:read"
RUN = "compute:jobs:run"
FAILURES_READ = 500
"""How many recent runs (all jobs) `list` counts failures and finds last errors among."""


def job_names() -> tuple[str, ...]:
    """The registered jobs' names, in PRODUCT.md §7's order (the CLI's choices)."""
    return registry.job_names()


class JobsAPI:
    """The fleet's scheduled jobs, for root's principals."""

    def __init__(self, fleet: ApiHandle) -> None:
        self.fleet = fleet

    def _require(self, credential: Credential | None, action: str) -> None:
        def check() -> None:
            with self.fleet.read() as session:
                actor = authenticate(session, credential, None, self.fleet.now())
                actor.require(action, tenant_resource(ROOT_TENANT))

        self.fleet.run_call(check)

    # ----- reads --------------------------------------------------------------------------

    def status(
        self,
        credential: Credential | None,
        *,
        intervals: Mapping[str, float] | None = None,
        grace: float | None = None,
    ) -> Statuses:
        """Each job: interval, availability, last run, next due, due, overdue, lease holder."""
        self._require(credential, READ)
        return self.fleet.run_call(
            lambda: runner.status(self.fleet, intervals=intervals, grace=grace)
        )

    def runs(
        self,
        credential: Credential | None,
        *,
        limit: int = JOB_RUNS.default,
        job: str | None = None,
    ) -> Runs:
        """The latest recorded runs, newest first; NOT_FOUND for a job that is not registered."""
        self._require(credential, READ)
        return self.fleet.run_call(lambda: runner.recent_runs(self.fleet, limit=limit, job=job))

    def list(self, credential: Credential | None) -> JobPageJson:
        """Each job's status with its failures among the recent runs and its last error."""
        self._require(credential, READ)
        return self.fleet.run_call(self._list)

    def _list(self) -> JobPageJson:
        runs = runner.recent_runs(self.fleet, limit=FAILURES_READ)
        failures = Counter(r["job"] for r in runs if r["outcome"] == "error")
        last_error: dict[str, str] = {}
        for run in runs:  # newest first
            if run["outcome"] == "error":
                last_error.setdefault(run["job"], str(run["error"]))
        items: list[JobJson] = [
            {**row, "failures": failures[row["job"]], "lastError": last_error.get(row["job"])}
            for row in runner.status(self.fleet)
        ]
        return {"items": items}

    # ----- runs ---------------------------------------------------------------------------

    def run(self, credential: Credential | None, job: str) -> JobRunJson:
        """Run the job now, due or not, under its lease; LOCKED when it runs elsewhere."""
        self._require(credential, RUN)
        [result] = runner.tick(self.fleet, job=job)
        return result.to_json()

    def tick(self, credential: Credential | None, *, job: str | None = None) -> Runs:
        """Every due job once (or the named one now); SIGTERM/SIGINT end it after the running job."""
        self._require(credential, RUN)
        stop.clear_stop()
        previous = scheduler.install_stop_signals()
        try:
            return [r.to_json() for r in runner.tick(self.fleet, job=job)]
        finally:
            scheduler.restore_signals(previous)
            stop.clear_stop()

    def call(self, credential: Credential | None, job: str) -> dict[str, int]:
        """One round of the job's function now, as `fleet demo` and `fleet webhooks deliver` do
        it: no lease taken and no run recorded; the job's counts back."""
        self._require(credential, RUN)
        function = registry.get_job(job).load()
        if function is None:
            return {}
        return function(self.fleet, self.fleet.now())

    def daemon(
        self,
        credential: Credential | None,
        *,
        jobs: Sequence[str] = (),
        intervals: Mapping[str, float] | None = None,
        in_foreground: bool = True,
        on_started: Callable[[], None] | None = None,
    ) -> int:
        """The scheduler daemon until a stop is requested (SIGTERM/SIGINT in the foreground, or
        request_stop()); returns 0. NOT_FOUND for a job name that is not registered."""
        self._require(credential, RUN)
        for name in [*jobs, *(intervals or {})]:
            registry.get_job(name)
        code = scheduler.run_scheduler(
            self.fleet,
            jobs=list(jobs) or None,
            intervals=intervals,
            install_signals=in_foreground,
            on_started=on_started,
        )
        if in_foreground:
            scheduler.ignore_stop_signals()  # exit 0 even if a second SIGTERM comes late
        return code

    @staticmethod
    def request_stop() -> None:
        """Ask the daemon and running jobs of this process to stop after their transaction."""
        stop.request_stop()

    @staticmethod
    def wait_for_stop(timeout: float | None = None) -> bool:
        """Block until a stop is requested (or the timeout passes); True when requested."""
        return stop.wait_for_stop(timeout)
