"""A reservation whose replica was killed mid-request, retried with its idempotency key on another replica.

Two moments of the kill, each made certain rather than left to chance:
- after the commit, before the client read the answer (the row is there; the answer is lost);
- before the commit, while the request waits on a row lock the test holds (nothing is there).
Either way the retry on the other replica answers one reservation, and the database holds one.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, text

from bcfleet.store.engine import make_engine
from bench.scaleout_fleet import Replica, World, seed
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

WAIT_SECONDS = 30.0


@pytest.fixture
def world(pg_url: str) -> World:
    return seed(pg_url, hosts=1, vcpu_limit=16, gpu_limit=4)


@pytest.fixture
def replicas(pg_url: str, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    with (tmp_path / "replicas.log").open("wb") as log:
        pair = (Replica(pg_url, log), Replica(pg_url, log))
        try:
            for replica in pair:
                replica.start()
            for replica in pair:
                replica.wait_ready()
            yield pair
        finally:
            for replica in pair:
                replica.kill()


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    made = make_engine(pg_url)
    yield made
    made.dispose()


def send_unread(replica: Replica, world: World, body: dict[str, object]) -> socket.socket:
    """POST /v1/reservations on a raw socket whose answer the client never reads."""
    payload = json.dumps(body).encode()
    head = (
        f"POST /v1/reservations HTTP/1.1\r\nHost: 127.0.0.1:{replica.port}\r\n"
        f"Authorization: Bearer {world.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    connection = socket.create_connection(("127.0.0.1", replica.port))
    connection.sendall(head.encode() + payload)
    return connection


def reservations_with(engine: Engine, key: str) -> list[str]:
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id FROM reservations WHERE idempotency_key = :key"), {"key": key}
        )
        return [str(row[0]) for row in rows]


def retry(replica: Replica, world: World, body: dict[str, object]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {world.token}"}
    return httpx.post(f"{replica.base_url}/v1/reservations", json=body, headers=headers, timeout=30)


def ask(world: World, key: str) -> dict[str, object]:
    return {"pool": world.pool_id, "gpus": 1, "duration": "1h", "idempotencyKey": key}


def test_killed_after_the_commit_the_retry_answers_the_same_reservation(
    world: World, replicas: tuple[Replica, Replica], engine: Engine
) -> None:
    killed, other = replicas
    body = ask(world, "after-commit")
    connection = send_unread(killed, world, body)
    wait_until(lambda: reservations_with(engine, "after-commit"), timeout=WAIT_SECONDS)
    killed.kill()
    connection.close()
    answer = retry(other, world, body)
    assert answer.status_code == 201, answer.text
    assert reservations_with(engine, "after-commit") == [answer.json()["id"]]


def test_killed_before_the_commit_the_retry_makes_the_one_reservation(
    world: World, replicas: tuple[Replica, Replica], engine: Engine
) -> None:
    killed, other = replicas
    body = ask(world, "before-commit")
    with engine.connect() as holder:
        holder.execute(  # admission charges the gpu quota: the request waits on this row
            text("SELECT 1 FROM quotas WHERE tenant_id = 'soak' AND resource = 'gpu' FOR UPDATE")
        )

        def waiting_on_our_lock() -> bool:
            with engine.connect() as probe:
                return bool(
                    probe.execute(
                        text(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                            " AND wait_event_type = 'Lock' AND query ILIKE '%quotas%'"
                        )
                    ).scalar()
                )

        connection = send_unread(killed, world, body)
        wait_until(waiting_on_our_lock, timeout=WAIT_SECONDS)
        killed.kill()
        connection.close()
        holder.rollback()
    answer = retry(other, world, body)
    assert answer.status_code == 201, answer.text
    assert reservations_with(engine, "before-commit") == [answer.json()["id"]]
