"""Set-based SQL of vps.usage: every metered subject of a batch of windows, inserted once per key.

The arithmetic is bcfleet.domain.usage's, done by the database on integers so
that one INSERT … SELECT meters tens of thousands of subjects: times become
microseconds since the epoch, and a window's quantity in millionths is

    rhe(base + rate × (piece_end − origin)) − rhe(base + rate × (piece_start − origin))

summed over the pieces of the window, where origin is the subject's start (for a resized
instance, the start of the claim period), base what it counted before origin (0 but after a
resize), rhe(n) rounds n / 3600 half to even, and
rates are whole units per hour (flavor shapes, GPU counts, 1 credit). That is
round_quantity(rate × hours) of the domain, so the SQL and usage_records()
agree to the millionth (the tests compare them).

Subjects (documents 000, 003, 004):
- hosted instances, from their allocation's starts_at until released_at, stopped or not:
  vps.vcpu.hours and vps.memory.gib.hours (the allocation's claims, else the
  instance's shape; before a resize, the claims its claim_periods row kept) and gpu.<model>.hours (the shape's gpus, else its bookings);
- instances of an instance size (purpose spare, and service once a spare is
  taken): credits, 1 per instance-hour, instead of the vps meters;
- reservations, from activated_at until released_at or ends_at, whichever is
  first: gpu.<model>.hours, gpu.<model>.spot.hours for spot, gpus × nodes;
  a requeued victim was never activated and bills nothing;
- provider pools have no allocations: nothing.

Rows go to usage_windows when their meter is in billing_meters, otherwise to
usage_dead_letters with the reason; both with ON CONFLICT DO NOTHING on
(subject_id, meter, window_start), so reruns and overlapping runs are harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Numeric,
    Select,
    String,
    Table,
    and_,
    case,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    true,
    type_coerce,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import FunctionElement
from sqlmodel import Session

from bcfleet.domain.states import PoolKind, ReservationState
from bcfleet.domain.usage import METER_CREDITS, METER_MEMORY, METER_VCPU, WINDOW
from bcfleet.store.models import Allocation, Booking, ClaimPeriod, Instance, Pool, Reservation
from bcfleet.store.models.usage import DeadLetter, UsageWindow
from bcfleet.store.types import UTCDateTime

WINDOW_US = WINDOW // WINDOW.resolution  # 300,000,000 microseconds
US_PER_HOUR_PER_MILLIONTH = 3600  # quantity in millionths = rate × µs / 3600
SIZED_PURPOSES = ("spare", "service")
KEY = ("subject_id", "meter", "window_start")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class epoch_us(FunctionElement[int]):  # noqa: N801  (a SQL function, named like one)
    """Microseconds since the epoch of a UTC timestamp column, exact on SQLite and PostgreSQL."""

    type = BigInteger()
    inherit_cache = True
    name = "epoch_us"


@compiles(epoch_us, "sqlite")
def _epoch_us_sqlite(element: epoch_us, compiler: SQLCompiler, **kw: Any) -> str:
    # SQLAlchemy stores SQLite datetimes as 'YYYY-MM-DD HH:MM:SS.ffffff'. The seconds are read
    # without the fraction: SQLite's date functions round fractions to milliseconds, so
    # 10:00:24.9995 would count as 10:00:25 and the microseconds would be added twice.
    arg = compiler.process(next(iter(element.clauses)), **kw)
    return (
        f"(CAST(strftime('%s', substr({arg}, 1, 19)) AS INTEGER) * 1000000"
        f" + CAST(substr({arg}, 21, 6) AS INTEGER))"
    )


@compiles(epoch_us, "postgresql")
def _epoch_us_postgresql(element: epoch_us, compiler: SQLCompiler, **kw: Any) -> str:
    arg = compiler.process(next(iter(element.clauses)), **kw)
    return f"CAST(EXTRACT(EPOCH FROM {arg}) * 1000000 AS BIGINT)"


def _table(model: Any, alias: str) -> Any:
    table: Table = model.__table__
    return table.alias(alias)


def _least(x: ColumnElement[Any], y: ColumnElement[Any]) -> ColumnElement[Any]:
    """The earlier of two nullable times, NULL meaning 'no bound' (SQLite compares the stored
    'YYYY-MM-DD HH:MM:SS.ffffff' text, which orders like the times)."""
    return case((x.is_(None), y), (y.is_(None), x), (x < y, x), else_=y)


def _gpu_model(pools: Any) -> ColumnElement[str]:
    return func.lower(func.coalesce(pools.c.gpu_model, "unknown"))


@dataclass(frozen=True)
class Branch:
    """One kind of metered subject: a SELECT of (subject, tenant, pool, meter, rate, start, end)."""

    query: Select[Any]
    meter: ColumnElement[str]
    fixed_meter: str | None  # the one meter it produces, when it is a constant
    subject: ColumnElement[str]  # the subject's id column (instance or reservation id)
    kind: str  # instance | reservation
    tenant: ColumnElement[str]

    def where(self, *criteria: ColumnElement[bool]) -> Branch:
        return replace(self, query=self.query.where(*criteria))


def subjects_between(all_branches: Sequence[Branch], first: str, last: str) -> list[Branch]:
    """The branches narrowed to subjects whose id is in [first, last] (the database's order)."""
    return [b.where(b.subject.between(first, last)) for b in all_branches]


def subjects_except(all_branches: Sequence[Branch], subject_ids: Iterable[str]) -> list[Branch]:
    """The branches without these subjects (vps.usage meters faulted subjects on their own)."""
    skipped = sorted(subject_ids)
    if not skipped:
        return list(all_branches)
    return [b.where(b.subject.not_in(skipped)) for b in all_branches]


def subject_keys(session: Session, all_branches: Sequence[Branch]) -> list[tuple[str, str, str]]:
    """(id, kind, tenant) of every subject of the branches, ordered by id in the database's order.

    Only the subjects' ids and filters are read, not their rates: a subject whose rate cannot be
    computed is still listed, so that vps.usage can find it by halving the list.
    """
    queries = [
        b.query.with_only_columns(
            b.subject.label("subject_id"),
            literal(b.kind, String()).label("kind"),
            b.tenant.label("tenant_id"),
        )
        for b in all_branches
    ]
    source = queries[0] if len(queries) == 1 else union_all(*queries)
    keys = source.subquery("keys")
    rows = session.execute(
        select(keys.c.subject_id, keys.c.kind, keys.c.tenant_id)
        .distinct()
        .order_by(keys.c.subject_id)
    ).all()
    return [(str(i), str(k), str(t)) for i, k, t in rows]


def _columns(
    subject_id: Any,
    kind: str,
    tenant_id: Any,
    pool_id: Any,
    meter: ColumnElement[str],
    rate: ColumnElement[Any],
    start_us: ColumnElement[Any],
    end_us: ColumnElement[Any],
    base: ColumnElement[Any] | None = None,
    resized: ColumnElement[Any] | None = None,
) -> list[ColumnElement[Any]]:
    """A subject's row; base is rate × µs it counted before start_us (earlier claim periods),
    resized 1 when its windows may be split into pieces (it has claim periods)."""
    return [
        subject_id.label("subject_id"),
        literal(kind, String()).label("subject_kind"),
        tenant_id.label("tenant_id"),
        pool_id.label("pool_id"),
        meter.label("meter"),
        cast(rate, BigInteger()).label("rate"),
        start_us.label("start_us"),
        end_us.label("end_us"),
        cast(literal(0) if base is None else base, BigInteger()).label("base"),
        (literal(0) if resized is None else resized).label("resized"),
    ]


def _instance_branches(
    batch_start: datetime, batch_end: datetime, resized_fleet: bool
) -> list[Branch]:
    a, i, p = _table(Allocation, "a"), _table(Instance, "i"), _table(Pool, "p")
    start_us = epoch_us(a.c.starts_at)
    end_us = epoch_us(_least(a.c.released_at, a.c.ends_at))
    live = [
        a.c.consumer_kind == "instance",
        p.c.kind == PoolKind.VPS_HOST,
        a.c.starts_at < type_coerce(batch_end, UTCDateTime()),
        or_(a.c.released_at.is_(None), a.c.released_at > type_coerce(batch_start, UTCDateTime())),
        or_(a.c.ends_at.is_(None), a.c.ends_at > type_coerce(batch_start, UTCDateTime())),
    ]
    joined = a.join(i, i.c.id == a.c.consumer_id).join(p, p.c.id == a.c.pool_id)
    tenant_purpose = i.c.purpose.not_in(SIZED_PURPOSES)
    bookings = _table(Booking, "b")
    booked_gpus = (
        select(func.count())
        .where(bookings.c.consumer_id == i.c.id, bookings.c.consumer_kind == "instance")
        .scalar_subquery()
    )
    gpus = func.coalesce(i.c.shape["gpus"].as_integer(), booked_gpus)
    gpu_meter = literal("gpu.", String()) + _gpu_model(p) + literal(".hours", String())

    def branch(meter: str | ColumnElement[str], rate: Any, where: Any) -> Branch:
        expr = literal(meter, String()) if isinstance(meter, str) else meter
        columns = _columns(
            i.c.id, "instance", a.c.tenant_id, a.c.pool_id, expr, rate, start_us, end_us
        )
        query = select(*columns).select_from(joined).where(*live, where)
        fixed = meter if isinstance(meter, str) else None
        return Branch(query, expr, fixed, i.c.id, "instance", a.c.tenant_id)

    vcpu = func.coalesce(a.c.claims["vcpu"].as_integer(), i.c.shape["vcpu"].as_integer())
    memory = func.coalesce(
        a.c.claims["memoryGiB"].as_integer(), i.c.shape["memoryGiB"].as_integer()
    )
    # After a resize, the current claims hold from the last claim period's end, and the
    # periods before it count at their own claims (_period_branches).
    if not resized_fleet:
        return [
            branch(METER_VCPU, vcpu, tenant_purpose),
            branch(METER_MEMORY, memory, tenant_purpose),
            branch(gpu_meter, gpus, and_(tenant_purpose, gpus > 0)),
            branch(METER_CREDITS, literal(1), i.c.purpose.in_(SIZED_PURPOSES)),
        ]
    past = _table(ClaimPeriod, "past")
    of_this = past.c.allocation_id == a.c.id
    last_end = select(func.max(past.c.ended_at)).where(of_this).scalar_subquery()
    since = epoch_us(func.coalesce(last_end, a.c.starts_at))
    resized = case((select(past.c.id).where(of_this).exists(), 1), else_=0)

    def current(meter: str, rate: Any, column: str) -> Branch:
        span = epoch_us(past.c.ended_at) - epoch_us(past.c.started_at)
        base = select(func.coalesce(func.sum(past.c[column] * span), 0)).where(of_this)
        columns = _columns(
            i.c.id, "instance", a.c.tenant_id, a.c.pool_id, literal(meter, String()), rate,
            since, end_us, base.scalar_subquery(), resized,
        )  # fmt: skip
        query = select(*columns).select_from(joined).where(*live, tenant_purpose)
        return Branch(query, literal(meter, String()), meter, i.c.id, "instance", a.c.tenant_id)

    return [
        current(METER_VCPU, vcpu, "vcpu"),
        current(METER_MEMORY, memory, "memory_gib"),
        *_period_branches(batch_start, batch_end),
        branch(gpu_meter, gpus, and_(tenant_purpose, gpus > 0)),
        branch(METER_CREDITS, literal(1), i.c.purpose.in_(SIZED_PURPOSES)),
    ]


def _period_branches(batch_start: datetime, batch_end: datetime) -> list[Branch]:
    """Hosted instances' earlier claim periods (a resize ended each) touching the batch."""
    cp, a, i, p = (
        _table(ClaimPeriod, "cp"), _table(Allocation, "a"), _table(Instance, "i"),
        _table(Pool, "p"),
    )  # fmt: skip
    earlier = _table(ClaimPeriod, "cp_before")
    earlier_span = epoch_us(earlier.c.ended_at) - epoch_us(earlier.c.started_at)
    joined = (
        cp.join(a, a.c.id == cp.c.allocation_id)
        .join(i, i.c.id == a.c.consumer_id)
        .join(p, p.c.id == a.c.pool_id)
    )
    where = [
        a.c.consumer_kind == "instance",
        p.c.kind == PoolKind.VPS_HOST,
        i.c.purpose.not_in(SIZED_PURPOSES),
        cp.c.started_at < type_coerce(batch_end, UTCDateTime()),
        cp.c.ended_at > type_coerce(batch_start, UTCDateTime()),
    ]
    result = []
    for meter, column in ((METER_VCPU, "vcpu"), (METER_MEMORY, "memory_gib")):
        base = (
            select(func.coalesce(func.sum(earlier.c[column] * earlier_span), 0))
            .where(
                earlier.c.allocation_id == cp.c.allocation_id,
                earlier.c.ended_at <= cp.c.started_at,
            )
            .scalar_subquery()
        )
        columns = _columns(
            i.c.id, "instance", a.c.tenant_id, a.c.pool_id, literal(meter, String()),
            cp.c[column], epoch_us(cp.c.started_at), epoch_us(cp.c.ended_at), base, literal(1),
        )  # fmt: skip
        query = select(*columns).select_from(joined).where(*where)
        result.append(
            Branch(query, literal(meter, String()), meter, i.c.id, "instance", a.c.tenant_id)
        )
    return result


def _reservation_branch(batch_start: datetime, batch_end: datetime) -> Branch:
    r, p = _table(Reservation, "r"), _table(Pool, "p")
    started = func.coalesce(
        r.c.activated_at, case((r.c.state == ReservationState.ACTIVE, r.c.starts_at))
    )
    start_us = epoch_us(started)
    end_us = epoch_us(_least(r.c.released_at, r.c.ends_at))
    model = _gpu_model(p)
    meter = case(
        (r.c.spot, literal("gpu.", String()) + model + literal(".spot.hours", String())),
        else_=literal("gpu.", String()) + model + literal(".hours", String()),
    )
    rate = r.c.gpus * r.c.nodes
    start_bound = type_coerce(batch_start, UTCDateTime())
    query = (
        select(
            *_columns(
                r.c.id, "reservation", r.c.tenant_id, r.c.pool_id, meter, rate, start_us, end_us
            )
        )
        .select_from(r.join(p, p.c.id == r.c.pool_id))
        .where(
            started.is_not(None),
            started < type_coerce(batch_end, UTCDateTime()),
            or_(r.c.released_at.is_(None), r.c.released_at > start_bound),
            or_(r.c.ends_at.is_(None), r.c.ends_at > start_bound),
            rate > 0,
        )
    )
    return Branch(query, meter, None, r.c.id, "reservation", r.c.tenant_id)


def any_resized(session: Session, batch_start: datetime) -> bool:
    """Whether an allocation live after batch_start has claim periods (was resized)."""
    cp, a = _table(ClaimPeriod, "cp"), _table(Allocation, "a")
    query = (
        select(cp.c.id)
        .select_from(cp.join(a, a.c.id == cp.c.allocation_id))
        .where(
            or_(
                a.c.released_at.is_(None), a.c.released_at > type_coerce(batch_start, UTCDateTime())
            )
        )
        .limit(1)
    )
    return session.execute(query).first() is not None


def branches(batch_start: datetime, batch_end: datetime, *, resized: bool = True) -> list[Branch]:
    """Every kind of metered subject live at some time in [batch_start, batch_end).

    resized False (any_resized found no claim periods in play) leaves the claim-period
    reads out, so a fleet without resizes meters at the cost it always had.
    """
    return [
        *_instance_branches(batch_start, batch_end, resized),
        _reservation_branch(batch_start, batch_end),
    ]


def possible_gpu_meters(session: Session) -> set[str]:
    """The GPU meters the pools' models can produce, regular and spot."""
    p = _table(Pool, "p")
    models = session.execute(select(_gpu_model(p)).distinct()).scalars().all()
    return {f"gpu.{m}.hours" for m in models} | {f"gpu.{m}.spot.hours" for m in models}


def split_by_catalogue(
    all_branches: Sequence[Branch], catalogue: set[str], gpu_meters: set[str]
) -> tuple[list[Select[Any]], list[Select[Any]]]:
    """The branch queries that bill (meter known) and those that dead-letter (meter unknown)."""
    billed: list[Select[Any]] = []
    dead: list[Select[Any]] = []
    for branch in all_branches:
        if branch.fixed_meter is not None:
            (billed if branch.fixed_meter in catalogue else dead).append(branch.query)
            continue
        if gpu_meters & catalogue:
            billed.append(branch.query.where(branch.meter.in_(sorted(catalogue))))
        if gpu_meters - catalogue:
            dead.append(branch.query.where(branch.meter.not_in(sorted(catalogue) or [""])))
    return billed, dead


def _windows_cte(windows: Iterable[datetime]) -> Any:
    rows = [
        select(
            type_coerce(start, UTCDateTime()).label("ws"),
            cast(literal((start - EPOCH) // WINDOW.resolution), BigInteger()).label("ws_us"),
        )
        for start in windows
    ]
    source = rows[0] if len(rows) == 1 else union_all(*rows)
    return source.cte("w")


def _rhe(n: ColumnElement[Any]) -> ColumnElement[Any]:
    """n / 3600 rounded half to even, for n >= 0, on integers."""
    d = US_PER_HOUR_PER_MILLIONTH
    q = n // d
    r = n - q * d
    up = or_(r * 2 > d, and_(r * 2 == d, q % 2 == 1))
    return q + case((up, 1), else_=0)


def _pieces(queries: Sequence[Select[Any]], windows: Sequence[datetime]) -> Any:
    """Per (subject, meter, window): the millionths it counts, as a subquery."""
    # MATERIALIZED: each subject's times are converted once, not once per use in the quantity
    # expressions (SQLite flattens the CTE otherwise, and the insert got five times slower).
    source = queries[0] if len(queries) == 1 else union_all(*queries)
    subjects = source.cte("s").prefix_with("MATERIALIZED")
    w = _windows_cte(windows)
    ws_end = w.c.ws_us + WINDOW_US
    piece_start = case((subjects.c.start_us > w.c.ws_us, subjects.c.start_us), else_=w.c.ws_us)
    piece_end = case(
        (and_(subjects.c.end_us.is_not(None), subjects.c.end_us < ws_end), subjects.c.end_us),
        else_=ws_end,
    )
    n_before = subjects.c.base + subjects.c.rate * (piece_start - subjects.c.start_us)
    n_after = subjects.c.base + subjects.c.rate * (piece_end - subjects.c.start_us)
    keys = [
        subjects.c.subject_id,
        subjects.c.subject_kind,
        subjects.c.tenant_id,
        subjects.c.pool_id,
        subjects.c.meter,
        w.c.ws.label("window_start"),
    ]
    overlap = and_(
        subjects.c.start_us < ws_end,
        or_(subjects.c.end_us.is_(None), subjects.c.end_us > w.c.ws_us),
    )
    counted = [subjects.c.rate > 0, n_after > n_before]

    def pieces(millionths: ColumnElement[Any], resized: int) -> Select[Any]:
        query = select(*keys, millionths.label("millionths")).select_from(subjects).join(w, overlap)
        return query.where(*counted, subjects.c.resized == resized)

    # A window that a resize split has a piece per claim period; its quantity is their sum,
    # which telescopes to rhe(at its end) − rhe(at its start) as base carries the count on.
    # Only resized subjects are grouped, so the tick costs the same for the others.
    whole = pieces(_rhe(n_after) - _rhe(n_before), 0)
    split = pieces(func.sum(_rhe(n_after) - _rhe(n_before)), 1).group_by(*keys)
    return union_all(whole, split).subquery("pieces")


def _quantity(pieces: Any) -> ColumnElement[Any]:
    return cast(pieces.c.millionths, Numeric(20, 6)) / literal_column("1000000.0")


def _execute_insert(session: Session, statement: Any) -> int:
    """Run an INSERT in the session's transaction (Core, not ORM); how many rows it added."""
    connection = session.connection()
    result = connection.execute(statement.execution_options(preserve_rowcount=True))
    if connection.dialect.name == "sqlite":
        # pysqlite reports -1 for a statement that starts with WITH
        return int(connection.execute(text("SELECT changes()")).scalar_one())
    return int(result.rowcount)


def _insert(session: Session, model: Any) -> Any:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(model)
    return sqlite.insert(model)


def insert_billed(
    session: Session, queries: Sequence[Select[Any]], windows: Sequence[datetime], now: datetime
) -> int:
    """INSERT the billed windows; returns how many were new."""
    if not queries or not windows:
        return 0
    pieces = _pieces(queries, windows)
    rows = select(
        pieces.c.tenant_id,
        pieces.c.subject_id,
        pieces.c.subject_kind,
        pieces.c.pool_id,
        pieces.c.meter,
        pieces.c.window_start,
        _quantity(pieces),
        type_coerce(now, UTCDateTime()),
    ).where(true())  # SQLite parses INSERT … SELECT … ON CONFLICT only after a WHERE
    names = [*_TARGET, "created_at"]
    statement = _insert(session, UsageWindow).from_select(names, rows)
    return _execute_insert(session, statement.on_conflict_do_nothing(index_elements=list(KEY)))


def insert_dead(
    session: Session, queries: Sequence[Select[Any]], windows: Sequence[datetime], now: datetime
) -> int:
    """INSERT the windows of unknown meters as dead letters; returns how many were new."""
    if not queries or not windows:
        return 0
    pieces = _pieces(queries, windows)
    reason = (
        literal("meter ", String())
        + pieces.c.meter
        + literal(" is not in the billing-meter catalogue", String())
    )
    rows = select(
        pieces.c.tenant_id,
        pieces.c.subject_id,
        pieces.c.subject_kind,
        pieces.c.pool_id,
        pieces.c.meter,
        pieces.c.window_start,
        _quantity(pieces),
        reason,
        type_coerce(now, UTCDateTime()),
    ).where(true())  # SQLite parses INSERT … SELECT … ON CONFLICT only after a WHERE
    names = [*_TARGET, "reason", "created_at"]
    statement = _insert(session, DeadLetter).from_select(names, rows)
    return _execute_insert(session, statement.on_conflict_do_nothing(index_elements=list(KEY)))


_TARGET = (
    "tenant_id",
    "subject_id",
    "subject_kind",
    "pool_id",
    "meter",
    "window_start",
    "quantity",
)


def earliest_start(session: Session) -> datetime | None:
    """When the first metered subject started: where a fresh watermark begins."""
    a, r = _table(Allocation, "a"), _table(Reservation, "r")
    first_allocation = select(func.min(a.c.starts_at)).where(a.c.consumer_kind == "instance")
    first_reservation = select(func.min(r.c.activated_at))
    values = [
        session.execute(first_allocation).scalar_one_or_none(),
        session.execute(first_reservation).scalar_one_or_none(),
    ]
    known = [v for v in values if v is not None]
    return min(known) if known else None
