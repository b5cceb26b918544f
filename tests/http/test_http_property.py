"""Property-based requests from the OpenAPI document (schemathesis): no 5xx, no answer off-schema.

Each operation is fuzzed over a real HTTP server as root's admin and as a tenant's member. As
root's admin only under `scripts/check --full` (marked `full`): every run has
tests/http/test_openapi_schemathesis.py, which fuzzes every operation as root's admin under
every check schemathesis ships (these five among them). The boundary cases of schemathesis's coverage phase are left to tests/http/test_openapi_schemathesis.py,
which runs every phase and every check: here they would be built again in every test process at
collection (about 20 s each) and add nothing the fuzzing does not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.http.app import create_app, openapi_document
from bcfleet.http.server import BackgroundServer
from tests.support.builders import flavor, host, hosted_pool, inventory, token
from tests.support.fleet import T0, open_fleet

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis import checks as st_checks  # noqa: E402
from schemathesis.specs.openapi import checks as oa_checks  # noqa: E402

EXAMPLES = int(os.environ.get("BCFLEET_FUZZ_EXAMPLES", "20"))
STREAMS = ("/v1/events/stream",)  # endless by design; tests of their own cover them

FUZZING_ONLY = schemathesis.Config.from_dict({"phases": {"coverage": {"enabled": False}}})
schema = schemathesis.openapi.from_dict(openapi_document(), config=FUZZING_ONLY).exclude(
    path=list(STREAMS)
)

CHECKS = [
    st_checks.not_a_server_error,
    oa_checks.response_schema_conformance,
    oa_checks.content_type_conformance,
    oa_checks.status_code_conformance,
    oa_checks.response_headers_conformance,
]


@pytest.fixture(
    scope="module", params=[pytest.param("root-admin", marks=pytest.mark.full), "tenant-member"]
)
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A served fleet with a pool, a host and a flavor under well-known names, and a token."""
    path: Path = tmp_path_factory.mktemp("fuzz") / "fleet.db"
    fleet = open_fleet(f"sqlite:///{path}", FakeClock(T0))
    pool = hosted_pool(fleet, "vps-fra")
    host(fleet, pool["id"], "fra-01", inventory())
    flavor(fleet, pool["id"], "g1.small")
    if request.param == "root-admin":
        bearer = token(fleet, "root", "fuzzer", role="admin")
    else:
        bearer = token(fleet, "acme", "fuzzer", role="member")
    with BackgroundServer(create_app(fleet, tally_seconds=0)) as server:
        yield {"url": server.url, "headers": {"Authorization": f"Bearer {bearer}"}}
    fleet.close()


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors_and_no_answer_off_the_document(case: Any, target: dict[str, Any]) -> None:
    case.call_and_validate(base_url=target["url"], headers=target["headers"], checks=CHECKS)
