"""`python -m tests.support.metering_worker URL NOW [START_AT]`: run vps.usage once, for the multi-process tests.

START_AT (seconds since the epoch) lines several workers up to start together.
"""

from __future__ import annotations

import json
import sys
import time

from bcfleet.clock import FakeClock, parse_time
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_usage import run_vps_usage
from bcfleet.settings import FleetSettings


def main(argv: list[str]) -> None:
    url, now = argv[0], parse_time(argv[1])
    fleet = Fleet.open(url, clock=FakeClock(now), settings=FleetSettings(db_url=url))
    if len(argv) > 2:
        time.sleep(max(0.0, float(argv[2]) - time.time()))
    counts = run_vps_usage(fleet, now)
    fleet.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main(sys.argv[1:])
