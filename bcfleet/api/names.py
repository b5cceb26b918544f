"""Fleet-wide names (pools, hosts): the one answer for a taken name, whoever holds it.

Pool and host names are unique across all tenants (FleetConfig and `--pool NAME`
refer to them). So that a refusal tells nobody which tenant holds a name, a taken
name gets the same CONFLICT and message whether the caller, another tenant or a
concurrent writer holds it: it names no owner and no object id.
"""

from __future__ import annotations

from sqlmodel import Session, select

from bcfleet.errors import ConflictError
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import Host, Pool


def name_unavailable(kind: str, name: str) -> ConflictError:
    """The refusal of a taken pool or host name."""
    return ConflictError(
        f"{kind} name {name!r} is not available; choose another",
        {"field": "name", "name": name, "reason": "name_unavailable"},
    )


def require_free_name(session: Session, model: type[Pool] | type[Host], name: str) -> None:
    """CONFLICT (name_unavailable) when a pool or host of any tenant has the name."""
    kind = "pool" if model is Pool else "host"
    if session.exec(select(model.id).where(model.name == name)).first() is not None:
        raise name_unavailable(kind, name)


def add_named(session: Session, row: Pool | Host) -> None:
    """Add a new pool or host; a concurrent writer's same name is the same CONFLICT."""
    kind = "pool" if isinstance(row, Pool) else "host"
    session.add(row)
    flush_or_conflict(session, name_unavailable(kind, row.name))
