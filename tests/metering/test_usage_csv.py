"""Usage CSV is RFC 4180, judged by a strict reader, and the CLI and HTTP write the same bytes."""

from __future__ import annotations

import csv
import io

from bcfleet.clock import FakeClock
from bcfleet.domain.usage_csv import CSV_FIELDS, csv_lines
from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import run_job
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor
from tests.support.capacity import pool_with_hosts
from tests.support.fleet import run_cli
from tests.support.http import served

HOSTILE = ["plain", "comma, inside", 'a "quote"', "carriage\rreturn", "line\nfeed", "crlf\r\nboth"]


def strict_records(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def test_every_field_survives_a_strict_reader() -> None:
    rows = [dict.fromkeys(CSV_FIELDS, value) for value in HOSTILE]
    text = "".join(csv_lines(rows))
    records = strict_records(text)
    assert records[0] == list(CSV_FIELDS)
    assert records[1:] == [[value] * len(CSV_FIELDS) for value in HOSTILE]
    assert text.endswith("\r\n") and text.count("\r\n") >= len(HOSTILE) + 1  # CRLF records


def test_the_cli_and_http_exports_are_the_same_rfc_4180_bytes(
    fleet: Fleet, clock: FakeClock, sqlite_url: str
) -> None:
    pool = pool_with_hosts(fleet)
    run_vps_hosts(fleet, clock.now())
    flavor(fleet, pool["id"])
    fleet.api.usage.setup_meters(OP)
    fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    clock.advance(minutes=20)
    run_job(fleet, "vps.usage")
    listed = fleet.api.usage.list(OP, limit=10000)["items"]
    with served(fleet, tally_seconds=0) as (_server, root):
        over_http = root.get("/v1/usage/export", params={"format": "csv"}).content.decode()
    on_cli = run_cli("usage", "export", "--format", "csv", db=sqlite_url).stdout
    assert on_cli == over_http
    records = strict_records(on_cli)
    assert len(records) == len(listed) + 1 > 1
    assert [r[-1] for r in records[1:]] == [w["quantity"] for w in listed]
