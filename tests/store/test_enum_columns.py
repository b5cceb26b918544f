"""State and kind columns read back as their enums, store plain text, and let unknown text pass."""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import select

from bcfleet.domain.states import HostState, InstanceState, PoolKind
from bcfleet.fleet import Fleet
from bcfleet.store.models import Host, Instance, Pool
from tests.support.builders import OP, flavor, host, hosted_pool, inventory


def _placed(fleet: Fleet) -> str:
    pool = hosted_pool(fleet, "vps-fra")
    host(fleet, pool["id"], "fra-01", inventory())
    flavor(fleet, pool["id"], "g1.small")
    made = fleet.api.instances.create(OP, tenant_id="root", pool_id=pool["id"], flavor="g1.small")
    return str(made["id"])


def test_states_and_kinds_read_back_as_members_stored_as_their_text(any_fleet: Fleet) -> None:
    instance_id = _placed(any_fleet)
    with any_fleet.read() as session:
        instance = session.get(Instance, instance_id)
        assert instance is not None
        assert type(instance.state) is InstanceState and instance.state is InstanceState.PENDING
        pool = session.exec(select(Pool)).one()
        assert type(pool.kind) is PoolKind and pool.kind is PoolKind.VPS_HOST
        node = session.exec(select(Host)).one()
        assert type(node.state) is HostState and node.state is HostState.READY
        stored = session.execute(
            text("SELECT state FROM instances WHERE id = :id"), {"id": instance_id}
        ).scalar_one()
        assert stored == "pending" and type(stored) is str


def test_a_filter_on_unknown_text_matches_nothing_and_a_hand_written_value_reads_as_text(
    any_fleet: Fleet,
) -> None:
    instance_id = _placed(any_fleet)
    with any_fleet.read() as session:
        assert session.exec(select(Instance).where(Instance.state == "no-such")).all() == []
    with any_fleet.write() as session:
        session.execute(
            text("UPDATE instances SET state = 'hand-written' WHERE id = :id"), {"id": instance_id}
        )
    with any_fleet.read() as session:
        instance = session.get(Instance, instance_id)
        assert instance is not None and instance.state == "hand-written"
