"""The simulated host agent, for demos and tests: it reports placed instances ready a boot delay after placement.

A real agent says an instance is ready once its VM has booted. The simulated
one says so for every placed, running instance whose allocation started at
least `boot_seconds` (default `settings.spare_boot_seconds`) before `now`. It
never reads the wall clock: whoever calls it says what time it is, so a test
advances a FakeClock and calls it again. One set-based UPDATE per call.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select, update
from sqlmodel import col

from bcfleet.domain.states import InstanceState
from bcfleet.store.models import Allocation, Instance

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet


def boot_instances(fleet: Fleet, now: datetime, *, boot_seconds: float | None = None) -> int:
    """Mark booted instances ready (ready_at = now); returns how many it marked."""
    boot = fleet.settings.spare_boot_seconds if boot_seconds is None else boot_seconds
    booted_before = now - timedelta(seconds=boot)
    placed_long_enough = (
        select(col(Allocation.id))
        .where(
            col(Allocation.id) == col(Instance.allocation_id),
            col(Allocation.released_at).is_(None),
            col(Allocation.starts_at) <= booted_before,
        )
        .exists()
    )
    with fleet.write() as session:
        result = session.execute(
            update(Instance)
            .where(
                col(Instance.state) == InstanceState.RUNNING,
                col(Instance.ready_at).is_(None),
                col(Instance.node_id).is_not(None),
                placed_long_enough,
            )
            .values(ready_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
