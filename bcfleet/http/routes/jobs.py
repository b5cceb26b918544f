"""Routes of the scheduled jobs: each job's schedule and recent failures, and running one now."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import JobJson, JobPageJson, JobRunPageJson
from bcfleet.api.jobs import job_names
from bcfleet.domain.job_documents import JobRunJson, LeaseHolderJson
from bcfleet.domain.pages import JOB_RUNS
from bcfleet.http.operations import Call, Operation, page_limit
from bcfleet.http.schemas import COUNT
from bcfleet.http.typed_schemas import document_schemas

TAG = "jobs"
SCHEMAS = document_schemas(
    (LeaseHolderJson, JobJson, JobPageJson, JobRunJson, JobRunPageJson),
    {"Job": {"failures": COUNT}},
)
LIMIT = page_limit(JOB_RUNS, "At most this many runs.")


def list_jobs(call: Call) -> Any:
    return call.api.jobs.list(call.token)


def list_runs(call: Call) -> Any:
    return {
        "items": call.api.jobs.runs(call.token, limit=call.query["limit"], job=call.path["job"])
    }


def run_job(call: Call) -> Any:
    return call.api.jobs.run(call.token, call.path["job"])


OPERATIONS = [
    Operation("GET", "/v1/jobs", "jobs.list",
              "Each job: interval, last run and outcome, next due, failures and last error", TAG,
              list_jobs, response="JobPage",
              description="Root's principals only (compute:jobs:read); FORBIDDEN otherwise."),
    Operation("GET", "/v1/jobs/{job}/runs", "jobs.runs", "A job's latest recorded runs, newest first",
              TAG, list_runs, response="JobRunPage", query=(LIMIT,),
              description="Root's principals only (compute:jobs:read); FORBIDDEN otherwise."),
    Operation("POST", "/v1/jobs/{job}/run", "jobs.run", "Run a job now, due or not", TAG,
              run_job, response="JobRun",
              description="Root's admin only (compute:jobs:run); FORBIDDEN otherwise. LOCKED "
              "while the job runs elsewhere; NOT_FOUND for a name that is not one of: "
              + ", ".join(job_names()) + ". The run's own failure is its outcome, not an "
              "error answer."),
]  # fmt: skip
