"""Lost database connections and 64-bit cursors: a call is run once more only when nothing was saved."""

from __future__ import annotations

import threading
from collections import Counter

import httpx
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError

from bcfleet.errors import ConflictError, DatabaseUnavailableError, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from bcfleet.http.operations import Param
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store import engine as engine_module
from bcfleet.store.event_log import emit
from bcfleet.store.faults import COMMIT_OUTCOME_UNKNOWN, CONNECTION_LOST, flush_or_conflict
from bcfleet.store.models import Tenant
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.db_faults import TERMINATE_OTHERS, Faults, kill, libpq_url
from tests.support.fleet import run_cli
from tests.support.http import PLACEMENT, error_code, served

CURSOR_MAX = 2**63 - 1


def tenant_ids(fleet: Fleet) -> list[str]:
    return [t["id"] for t in fleet.api.tenants.list(OP)["items"]]


# ----- the whole call is run once more, only when nothing can have been saved ----------------


def test_a_write_whose_connection_dies_before_commit_is_run_once_more(any_fleet: Fleet) -> None:
    faults = Faults(any_fleet, "INSERT INTO tenants", kills=1)
    made = any_fleet.api.tenants.create(OP, "acme")
    faults.remove()
    assert made["id"] == "acme"
    assert (faults.killed, faults.runs, faults.commits) == (1, 2, 1)
    assert tenant_ids(any_fleet).count("acme") == 1


def test_a_read_whose_connection_dies_is_run_once_more(any_fleet: Fleet) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    faults = Faults(any_fleet, "SELECT tenants.id", kills=1)
    listed = tenant_ids(any_fleet)
    faults.remove()
    assert faults.killed == 1 and faults.runs == 2
    assert sorted(listed) == ["acme", "root"]


def test_a_second_lost_connection_answers_database_unavailable(any_fleet: Fleet) -> None:
    faults = Faults(any_fleet, "INSERT INTO tenants", kills=2)
    with pytest.raises(DatabaseUnavailableError) as raised:
        any_fleet.api.tenants.create(OP, "acme")
    faults.remove()
    assert raised.value.details == {"reason": CONNECTION_LOST}
    assert raised.value.http_status == 503 and raised.value.retry_after_seconds == 1
    assert faults.runs == 2  # run once more, never twice more
    assert "acme" not in tenant_ids(any_fleet)


def test_a_connection_lost_while_committing_is_not_run_again(any_fleet: Fleet) -> None:
    faults = Faults(any_fleet, "INSERT INTO tenants", at_commit=True)
    with pytest.raises(DatabaseUnavailableError) as raised:
        any_fleet.api.tenants.create(OP, "acme")
    faults.remove()
    assert raised.value.details == {"reason": COMMIT_OUTCOME_UNKNOWN}
    assert "may or may not have been saved" in raised.value.message
    assert (faults.runs, faults.commits) == (1, 1)  # COMMIT was on its way: never sent twice


def test_inside_one_transaction_a_lost_connection_is_never_run_again(any_fleet: Fleet) -> None:
    faults = Faults(any_fleet, "INSERT INTO tenants", kills=1)
    with pytest.raises(DatabaseUnavailableError), any_fleet.transaction() as joined:
        joined.api.tenants.create(OP, "acme")
        joined.api.tenants.create(OP, "globex")
    faults.remove()
    assert faults.runs == 1
    assert tenant_ids(any_fleet) == ["root"]


def test_errors_that_are_not_lost_connections_are_not_run_again(any_fleet: Fleet) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    faults = Faults(any_fleet, "INSERT INTO tenants", kills=0)
    with pytest.raises(Exception) as raised:  # noqa: PT011 - a conflict, whichever class says it
        any_fleet.api.tenants.create(OP, "acme")
    faults.remove()
    assert not isinstance(raised.value, DatabaseUnavailableError)
    assert faults.runs == 0


def test_over_http_a_lost_database_answers_503_with_retry_after(fleet: Fleet) -> None:
    with served(fleet) as (_server, api):
        faults = Faults(fleet, "INSERT INTO tenants", kills=2)
        answer = api.post("/v1/tenants", json={"id": "acme"})
        faults.remove()
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "1"
        assert error_code(answer) == "DATABASE_UNAVAILABLE"
        assert answer.json()["error"]["details"] == {"reason": CONNECTION_LOST}
        faults = Faults(fleet, "INSERT INTO tenants", kills=1)
        answer = api.post("/v1/tenants", json={"id": "acme"})
        faults.remove()
        assert answer.status_code == 201, answer.text


def test_the_cli_says_database_unavailable_when_the_database_cannot_be_reached() -> None:
    result = run_cli("tenants", "list", "--json", db="postgresql://postgres@127.0.0.1:1/none")
    assert result.exit_code == 1, result.stderr
    body = result.json()
    assert isinstance(body, dict)
    assert body["error"]["code"] == "DATABASE_UNAVAILABLE"
    assert "Traceback" not in result.stderr


# ----- 64-bit cursors -------------------------------------------------------------------------


def test_event_cursors_past_32_bits_page_on_both_engines(any_fleet: Fleet) -> None:
    start = 2**40
    with any_fleet.write() as session:
        if any_fleet.engine.dialect.name == "sqlite":
            emit(session, any_fleet.ids, any_fleet.now(), "test.filler", tenant_id=None)
            session.execute(text("UPDATE events SET seq = :s"), {"s": start})
        else:
            session.execute(
                text("SELECT setval(pg_get_serial_sequence('events', 'seq'), :s)"), {"s": start}
            )
    with any_fleet.write() as session:
        emit(session, any_fleet.ids, any_fleet.now(), "test.big", tenant_id="root")
    page = any_fleet.api.events.list(OP, after=start)
    assert [(e["type"], e["seq"]) for e in page["items"]] == [("test.big", start + 1)]
    assert page["cursor"] == start + 1
    assert any_fleet.api.events.list(OP, after=CURSOR_MAX)["items"] == []


COUNTERS = [
    ("events", "seq"),
    ("webhooks", "cursor"),
    ("webhook_deliveries", "id"),
    ("webhook_deliveries", "event_seq"),
    ("usage_windows", "id"),
    ("usage_dead_letters", "id"),
    ("gpu_atoms", "id"),
    ("claim_periods", "id"),
    ("bookings", "atom_id"),
    ("hosts", "inventory_generation"),
    ("node_resources", "generation"),
    ("pools", "version"),
    ("flavors", "version"),
    ("compute_settings", "version"),
    ("gpu_pool_versions", "version"),
    ("gpu_node_versions", "version"),
    ("state_revision", "revision"),
]


@pytest.mark.postgres
def test_cursors_and_counters_are_bigint_on_postgresql(pg_database: str) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(pg_database)
    with engine.connect() as connection:
        types = {
            (t, c): d
            for t, c, d in connection.execute(
                text(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'public'"
                )
            ).all()
        }
    engine.dispose()
    assert {key: types.get(key) for key in COUNTERS} == dict.fromkeys(COUNTERS, "bigint")


@pytest.mark.parametrize(
    ("after", "status"),
    [
        pytest.param("9223372036854775808", 400, id="one-past-int64-is-invalid-input"),
        pytest.param("-1", 400, id="negative-is-invalid-input"),
        pytest.param("99999999999999999999999", 400, id="far-past-int64-is-invalid-input"),
        pytest.param(str(CURSOR_MAX), 200, id="int64-max-is-an-empty-page"),
        pytest.param("0", 200, id="zero-is-the-start"),
    ],
)
def test_the_after_cursor_is_0_to_int64_max_over_http(
    fleet: Fleet, after: str, status: int
) -> None:
    with served(fleet) as (_server, api):
        for path in ("/v1/events", "/v1/usage"):
            answer = api.get(path, params={"after": after})
            assert answer.status_code == status, answer.text
            if status == 400:
                message = answer.json()["error"]["message"]
                assert error_code(answer) == "INVALID_INPUT"
                assert f"between 0 and {CURSOR_MAX}" in message and "None" not in message


def test_last_event_id_past_int64_is_invalid_input(fleet: Fleet) -> None:
    with served(fleet) as (_server, api):
        answer = api.get("/v1/events/stream", headers={"Last-Event-ID": str(CURSOR_MAX + 1)})
        assert answer.status_code == 400
        assert str(CURSOR_MAX) in answer.json()["error"]["message"]


def test_the_api_and_cli_refuse_a_cursor_past_int64(fleet: Fleet, cli: object) -> None:
    with pytest.raises(InvalidInputError, match=str(CURSOR_MAX)):
        fleet.api.events.list(OP, after=CURSOR_MAX + 1)
    with pytest.raises(InvalidInputError, match=str(CURSOR_MAX)):
        fleet.api.usage.list(OP, after=-1)
    result = cli("events", "list", "--after", str(CURSOR_MAX + 1), "--json")  # type: ignore[operator]
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "INVALID_INPUT"


def test_every_integer_query_parameter_documents_both_bounds() -> None:
    for op in all_operations():
        for param in op.query:
            if param.kind == "integer":
                schema = param.schema()
                assert "minimum" in schema and "maximum" in schema, (op.operation_id, param.name)
    with pytest.raises(ValueError, match="minimum and a maximum"):
        Param("n", "integer", minimum=0)


# ----- PostgreSQL backends terminated under load ------------------------------------------------

THREADS, ROUNDS = 4, 25


def _fleet_to_load(fleet: Fleet) -> None:
    """A root pool with two roomy hosts and a one-vCPU flavor."""
    hosted_pool(fleet, "vps-fra", offered_to=(), gpu_model=None)
    for name in ("fra-01", "fra-02"):
        host(fleet, "vps-fra", name, inventory(cpus=96, memory_gib=512, disk_gib=4000), PLACEMENT)
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, "vps-fra", "g1.tiny", vcpu=1, memory_gib=1, disk_gib=1)


def _load(
    base_url: str, bearer: str, worker: int, answers: list[tuple[str, httpx.Response]]
) -> None:
    headers = {"Authorization": f"Bearer {bearer}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30.0) as http:
        for round_ in range(ROUNDS):
            name = f"w{worker}-{round_}"
            body = {"pool": "vps-fra", "flavor": "g1.tiny", "name": name}
            answers.append((name, http.post("/v1/instances", json=body)))
            answers.append(("", http.get("/v1/instances")))
            answers.append(("", http.get("/v1/events", params={"limit": 50})))
            answers.append(("", http.get("/v1/pools")))


def _terminate_backends(fleet: Fleet, stop: threading.Event, terminated: list[int]) -> None:
    with psycopg.connect(libpq_url(fleet), autocommit=True) as admin:
        while not stop.wait(0.1):
            rows = admin.execute(TERMINATE_OTHERS).fetchall()
            terminated.append(sum(1 for (done,) in rows if done))


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_terminated_postgresql_backends_under_load_never_answer_500(any_fleet: Fleet) -> None:
    fleet = any_fleet
    _fleet_to_load(fleet)
    answers: list[tuple[str, httpx.Response]] = []
    terminated: list[int] = []
    stop = threading.Event()
    with served(fleet) as (server, api):
        killer = threading.Thread(target=_terminate_backends, args=(fleet, stop, terminated))
        killer.start()
        try:
            workers = [
                threading.Thread(target=_load, args=(server.url, api.token, w, answers))
                for w in range(THREADS)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        finally:
            stop.set()
            killer.join()
    assert len(answers) == THREADS * ROUNDS * 4
    assert sum(terminated) > 0  # the fault really happened
    statuses = Counter(response.status_code for _, response in answers)
    assert set(statuses) <= {200, 201, 503}, statuses
    for _, response in answers:
        if response.status_code == 503:
            assert response.headers.get("retry-after") == "1"
            assert error_code(response) == "DATABASE_UNAVAILABLE"
    acknowledged = {name for name, r in answers if name and r.status_code == 201}
    assert acknowledged
    names = Counter(i["name"] for i in fleet.api.instances.list(OP)["items"])
    assert all(names[name] == 1 for name in acknowledged)
    assert max(names.values()) == 1  # nothing was written twice, acknowledged or not
    report = fleet.api.doctor.check(OP, invariants=True)
    assert report["invariants"]["ok"], report["invariants"]["problems"]


def test_a_broken_constraint_at_a_flush_is_the_callers_conflict(any_fleet: Fleet) -> None:
    conflict = ConflictError("tenant 'root' exists", {"tenant": "root"})
    with pytest.raises(ConflictError) as caught, any_fleet.write() as session:
        session.add(Tenant(id="root", name="again", created_at=any_fleet.now()))
        flush_or_conflict(session, conflict)
    assert caught.value is conflict
    assert isinstance(caught.value.__cause__, IntegrityError)
    with any_fleet.read() as session:
        assert session.get(Tenant, "root").name == "root"  # type: ignore[union-attr]


# ----- pooled PostgreSQL connections: pinged after an idle spell, not in steady use ----------


def _pooled_backend(fleet: Fleet) -> object:
    """Check a connection out and back in; its DB-API connection, now idle in the pool."""
    with fleet.engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
        return connection.connection.dbapi_connection


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_pooled_connection_that_died_while_idle_is_replaced_before_use(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.0)  # every spell in the pool counts
    dead = _pooled_backend(any_fleet)
    kill(any_fleet, dead)
    with any_fleet.engine.connect() as connection:  # the checkout's ping finds it dead
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1
        assert connection.connection.dbapi_connection is not dead
    assert tenant_ids(any_fleet) == ["root"]


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_connection_in_steady_use_is_not_pinged_and_its_loss_is_the_fault_rules(
    any_fleet: Fleet,
) -> None:
    dead = _pooled_backend(any_fleet)
    kill(any_fleet, dead)
    with pytest.raises(DBAPIError) as raised, any_fleet.engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")  # no ping went first: the statement meets it
    assert raised.value.connection_invalidated
    assert tenant_ids(any_fleet) == ["root"]  # the pool let the dead ones go: a new connection
