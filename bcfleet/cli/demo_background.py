"""The demo's background: the scheduler's jobs and a simulated agent, running while the dashboard is open."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bcfleet.agent.simulate import boot_instances
from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.fleet import Fleet

AGENT_EVERY_SECONDS = 2.0


def _agent_loop(fleet: Fleet) -> None:
    """The simulated agent of every host: instances become ready after the boot delay."""
    while not fleet.api.jobs.wait_for_stop(AGENT_EVERY_SECONDS):
        try:
            boot_instances(fleet, LOCAL_OPERATOR, fleet.now())
        except Exception:  # noqa: BLE001 - the demo keeps running; the error is logged
            logging.getLogger("bcfleet.demo").exception("simulated agent round failed")


@contextmanager
def background(fleet: Fleet) -> Iterator[None]:
    """Run the jobs (APScheduler) and the simulated agent in threads until the block ends."""
    logging.getLogger("bcfleet").setLevel(logging.WARNING)  # the dashboard owns the terminal
    scheduler = threading.Thread(
        target=fleet.api.jobs.daemon,
        args=(LOCAL_OPERATOR,),
        kwargs={"in_foreground": False},
        daemon=True,
    )
    scheduler.start()
    agent = threading.Thread(target=_agent_loop, args=(fleet,), daemon=True)
    agent.start()
    try:
        yield
    finally:
        fleet.api.jobs.request_stop()
        scheduler.join(timeout=30)
        agent.join(timeout=10)
