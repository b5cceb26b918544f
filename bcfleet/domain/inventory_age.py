"""When a host's inventory is stale: the host agent's reporting period, and how many missed reports
make it so. The agent's defaults come from here, and so does the console's flag."""

from __future__ import annotations

AGENT_ROUND_SECONDS = 5.0
"""The host agent's round: it pulls its InstanceSpecs this often (`fleet agent run --interval`)."""
INVENTORY_EVERY_ROUNDS = 12
"""The agent reports its inventory every this many rounds: once a minute by default."""
MISSED_REPORTS = 5
"""An inventory is stale once this many reports in a row did not arrive."""
STALE_AFTER_SECONDS = AGENT_ROUND_SECONDS * INVENTORY_EVERY_ROUNDS * MISSED_REPORTS
"""Five minutes: inventory older than this no longer tells what the host has."""


def inventory_stale(age_seconds: float) -> bool:
    """Whether an inventory reported this many seconds ago is stale."""
    return age_seconds > STALE_AFTER_SECONDS
