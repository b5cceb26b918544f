"""/metrics judged by prometheus_client's own parser: every fleet counter equals the state it
counts, including instances the vps.hosts job placed after they waited."""

from __future__ import annotations

from collections import Counter
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.capacity import PLACEMENT
from tests.support.http import served
from tests.support.waiting import wait_for


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample, keyed by its name and sorted labels, as the official parser reads them."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def scrape_until(api: Any, ready: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    def caught_up() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        parsed = samples(api.as_(None).get("/metrics").text)  # tallied every 50 ms on its own
        return parsed if ready(parsed) else None

    return wait_for(caught_up, timeout=10, what="the counters to catch up")


def test_placements_count_every_instance_placed_even_later_by_the_job(fleet: Fleet) -> None:
    pool = hosted_pool(fleet)
    flavor(fleet, pool["id"], "g1.small", vcpu=2, memory_gib=4, disk_gib=40)
    made = [
        fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
        for _ in range(3)
    ]
    assert {m["state"] for m in made} == {"pending"}  # no host yet
    host(fleet, pool["id"], "h1", inventory(cpus=16), labels=PLACEMENT)
    run_vps_hosts(fleet, fleet.now())  # capacity, then the pending instances are placed
    running = [i for i in fleet.api.instances.list(OP)["items"] if i["state"] == "running"]
    assert len(running) == 3
    with served(fleet, tally_seconds=0.05) as (_server, api):
        parsed = scrape_until(
            api, lambda p: p.get(("bcfleet_placements_total", ()), 0) >= len(running)
        )
        logged = Counter(e["type"] for e in fleet.api.events.list(OP, limit=1000)["items"])
    assert parsed[("bcfleet_placements_total", ())] == len(running)
    for event_type, count in logged.items():
        assert parsed[("bcfleet_events_total", (("type", event_type),))] == count
    assert parsed.get(("bcfleet_preemptions_total", ()), 0) == 0
