"""instances.create_batch: N instances of one flavor admitted and placed in one transaction (Nova's min_count/max_count).

InstancesAPI.create_batch calls create_batch; the CLI's `instances create --count` and the
HTTP create with `count` reach it. Placement is placement/batch_placer.py's.

- Names: `NAME-1` … `NAME-N` with a name, else `FLAVOR-HHMMSS-1` … (the single create's name
  with the instance's number).
- Idempotency: the batch's key K gives instance i the key `K/i` (domain.idempotency.item_key).
  A batch sent again with K answers the instances the first one made (whatever their state
  now) and makes nothing; with other input, CONFLICT. A batch of which nothing fit made
  nothing, so sending it again places it afresh.
- The answer: `{"items": [Instance…], "count": N, "placed": P, "refused": N − P, "reason":
  null or "P of N fit: R refused: no host fits (…): …"}`; a replay's reason says that the
  refusal was counted when the batch was first placed.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, pool_resource, resolve
from bcfleet.api.documents import InstanceBatchJson, InstanceJson
from bcfleet.api.host_view import pool_host_view
from bcfleet.api.instance_list import made_json
from bcfleet.api.instances import (
    INSTANCE_NAME_MAX,
    InstancesAPI,
    default_name,
    instance_json,
    kept_shape,
)
from bcfleet.api.lookup import find_for_placement
from bcfleet.domain.bounds import check_count, check_optional_text, shown
from bcfleet.domain.idempotency import check_idempotency_key, check_replay, input_digest, item_key
from bcfleet.domain.states import PoolKind
from bcfleet.errors import InvalidInputError
from bcfleet.placement.batch_placer import place_batch
from bcfleet.store.event_log import emit_each
from bcfleet.store.models import Instance, Pool


def batch_names(base: str, count: int) -> list[str]:
    """The instances' names: base-1 … base-count."""
    return [f"{base}-{i}" for i in range(1, count + 1)]


def check_batch_name(name: str | None, count: int) -> None:
    """A batch's name: a name as any instance's, that with its longest suffix (-count) is still
    one (INSTANCE_NAME_MAX); INVALID_INPUT naming the suffix otherwise."""
    check_optional_text("name", name, INSTANCE_NAME_MAX)
    suffix = f"-{count}"
    if name is not None and len(name) + len(suffix) > INSTANCE_NAME_MAX:
        most = INSTANCE_NAME_MAX - len(suffix)
        raise InvalidInputError(
            f"name must be at most {most} characters with count {count}: its instances are "
            f"named up to {shown(name + suffix)}, and an instance's name is at most "
            f"{INSTANCE_NAME_MAX} characters",
            {"field": "name", "bound": f"1..{most} characters", "suffix": suffix},
        )


def create_batch(
    area: InstancesAPI,
    credential: Credential | None,
    *,
    tenant_id: str,
    pool_id: str,
    flavor: str,
    count: int,
    name: str | None,
    idempotency_key: str | None,
    all_or_nothing: bool,
) -> InstanceBatchJson:
    """The checks, then the one transaction (run once more when a concurrent batch with the
    same key committed first: it then answers as a replay)."""
    count = check_count(count)
    if not isinstance(all_or_nothing, bool):
        raise InvalidInputError(
            "allOrNothing must be true or false", {"allOrNothing": all_or_nothing}
        )
    check_batch_name(name, count)
    check_idempotency_key(idempotency_key)
    args = (area, credential, tenant_id, pool_id, flavor, count, name, idempotency_key)
    try:
        return _create(*args, all_or_nothing)
    except IntegrityError:
        if idempotency_key is None:
            raise
        return _create(*args, all_or_nothing)


def _create(
    area: InstancesAPI,
    credential: Credential | None,
    tenant_id: str,
    pool_id: str,
    flavor: str,
    count: int,
    name: str | None,
    key: str | None,
    all_or_nothing: bool,
) -> InstanceBatchJson:
    fleet = area.fleet
    with fleet.write() as session:
        # The catalog cache only in a transaction of the call's own, as instances.create's.
        catalog = fleet.placement.catalog if fleet.session is None else None
        actor, pool, row = find_for_placement(
            session,
            catalog,
            resolve(session, credential, fleet.now()),
            tenant_id,
            pool_id,
            flavor,
            after_sending=_nothing,
        )
        actor.require(
            "compute:instances:create",
            pool_resource(pool),
            {"gpus": row.gpus, "flavor": row.name, "spot": False},
        )
        keys = None
        digest = None
        if key is not None:
            fields = {"pool": pool.id, "flavor": row.id, "name": name, "count": count}
            digest = input_digest({**fields, "allOrNothing": all_or_nothing})
            keys = [item_key(key, i) for i in range(1, count + 1)]
            made = _made_before(session, actor, keys)
            if made:
                for instance in made:
                    check_replay(key, digest, instance.input_hash, "instance", instance.id)
                return _answer(session, actor, pool, row.name, made, count, _replayed(made, count))
        base = name or default_name(row.name, fleet.now())
        batch = place_batch(
            session,
            fleet,
            tenant_id=actor.tenant_id,
            pool=pool,
            shape=kept_shape(catalog, row)[0],
            names=batch_names(base, count),
            flavor_id=row.id,
            keys=keys,
            input_hash=digest,
            all_or_nothing=all_or_nothing,
        )
        kind = "instance.provisioning" if pool.kind == PoolKind.PROVIDER else "instance.placed"
        now = fleet.now()
        data: dict[str, dict[str, str]] = {}  # one document a state, shared: none changes it
        emit_each(
            session,
            fleet.ids,
            now,
            (
                (
                    kind,
                    v["tenant_id"],
                    v["id"],
                    data.setdefault(v["state"], {"state": str(v["state"])}),
                )
                for v in batch.made  # each row's values as written: every column
            ),
        )
        view = pool_host_view(actor, pool, [v["node_id"] for v in batch.made])
        return _batch_json(made_json(batch.made, row.name, view), count, batch.reason)


def _nothing() -> None:
    """Nothing sent behind the lookup."""


def _made_before(session: Session, actor: Actor, keys: Sequence[str]) -> list[Instance]:
    """The instances an earlier batch with these keys made, in the batch's order."""
    found = session.exec(
        select(Instance).where(
            Instance.tenant_id == actor.tenant_id, col(Instance.idempotency_key).in_(keys)
        )
    ).all()
    order = {k: i for i, k in enumerate(keys)}
    return sorted(found, key=lambda instance: order[instance.idempotency_key or ""])


def _replayed(made: Sequence[Instance], count: int) -> str | None:
    """A replay's reason: the refusal was counted when the batch was first placed."""
    if len(made) == count:
        return None
    refused = count - len(made)
    return f"{len(made)} of {count} fit: {refused} refused when the batch was first placed"


def _answer(
    session: Session,
    actor: Actor,
    pool: Pool,
    flavor_name: str,
    made: Sequence[Instance],
    count: int,
    reason: str | None,
) -> InstanceBatchJson:
    """A replay's answer: the instances an earlier batch made, as they are now."""
    view = pool_host_view(actor, pool, [i.node_id for i in made])
    items = [instance_json(session, actor, instance, flavor_name, view) for instance in made]
    return _batch_json(items, count, reason)


def _batch_json(items: list[InstanceJson], count: int, reason: str | None) -> InstanceBatchJson:
    return {
        "items": items,
        "count": count,
        "placed": len(items),
        "refused": count - len(items),
        "reason": reason,
    }
