"""The scale-out soak's load: a few client threads spreading placements, reservations and deploys over the replicas.

Each worker sends one request at a time (so the load is bounded by the
number of workers), to the replicas in turn, and writes what was
acknowledged (a 2xx answer) in the shared Ledger; bench/scaleout_checks.py
compares the ledger with the database afterwards. A reservation carries an
idempotency key and is retried, on the next replica, after a lost connection
or a 5xx answer, as a careful client would; the other writes are sent once.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.scaleout_fleet import FLAVOR, World

CREATE_TRIES = 20
BACKOFF_FIRST, BACKOFF_MOST = 0.05, 1.0  # seconds a client waits before it tries again
TIMEOUT = httpx.Timeout(15.0)
WEIGHTS = {
    "place": 4,
    "delete": 2,
    "reserve": 3,
    "cancel": 1,
    "deploy": 2,
    "environment": 1,
}


@dataclass
class Ledger:
    """What the clients were told, for the checks; every write under one lock."""

    placed: dict[str, str] = field(default_factory=dict)  # instance name -> id (acknowledged)
    unacknowledged_places: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)  # instance ids, acknowledged
    reserved: dict[str, set[str]] = field(default_factory=dict)  # key -> ids answered
    unacknowledged_keys: set[str] = field(default_factory=set)  # keys never answered 2xx
    cancelled: set[str] = field(default_factory=set)
    services: dict[str, str] = field(default_factory=dict)  # name -> id (acknowledged)
    deployed: set[str] = field(default_factory=set)  # service ids acknowledged as started
    environments: dict[str, str] = field(default_factory=dict)  # name -> id
    environment_sizes: dict[str, set[str]] = field(default_factory=dict)  # id -> sizes it may have
    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, name: str, amount: int = 1) -> None:
        with self.lock:
            self.counts[name] += amount


class Lost(Exception):
    """No answer: the connection was refused or cut (a replica was killed)."""


@dataclass
class Worker:
    """One client thread: its own connection pool, its own replica rotation and its own items."""

    number: int
    world: World
    base_urls: list[str]
    ledger: Ledger
    rng: random.Random
    stop: threading.Event
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=TIMEOUT))
    turn: int = 0
    serial: int = 0
    instances: list[str] = field(default_factory=list)
    reservations: list[str] = field(default_factory=list)

    def name(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}-{self.number}-{self.serial}"

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        base = self.base_urls[self.turn % len(self.base_urls)]
        self.turn += 1
        headers = {"Authorization": f"Bearer {self.world.token}"}
        try:
            response = self.http.request(method, base + path, json=body, headers=headers)
        except httpx.TransportError as exc:
            self.ledger.count("lostConnections")
            raise Lost(str(exc)) from exc
        self.ledger.count(f"http{response.status_code // 100}xx")
        if response.status_code >= 400:
            code = _error_code(response)
            self.ledger.count(f"refused:{code}")
        return response

    def back_off(self, attempt: int) -> bool:
        """Wait before trying again (longer each time); False when the load is over."""
        return not self.stop.wait(min(BACKOFF_FIRST * 2**attempt, BACKOFF_MOST))

    def run(self) -> None:
        actions: dict[str, Callable[[], None]] = {
            "place": self.place, "delete": self.delete, "reserve": self.reserve,
            "cancel": self.cancel, "deploy": self.deploy, "environment": self.environment,
        }  # fmt: skip
        names, weights = list(WEIGHTS), list(WEIGHTS.values())
        try:
            while not self.stop.is_set():
                action = self.rng.choices(names, weights)[0]
                try:
                    actions[action]()
                except Lost:
                    self.back_off(0)
        finally:
            self.http.close()

    def create(self, kind: str, path: str, body: dict[str, Any]) -> httpx.Response | None:
        """POST with an idempotency key, retried with back-off on the next replica after a lost
        connection or a 5xx; the first other answer, or None when none came."""
        for attempt in range(CREATE_TRIES):
            if attempt:
                if not self.back_off(attempt - 1):
                    return None
                self.ledger.count(f"{kind}Retries")
            try:
                answer = self.send("POST", path, body)
            except Lost:
                continue
            if answer.status_code < 500:
                if attempt and answer.is_success:
                    self.ledger.count(f"{kind}AnsweredAfterRetry")
                return answer
        return None

    def place(self) -> None:
        """An instance whose idempotency key is its name."""
        name = self.name("vm")
        body = {"pool": self.world.pool_id, "flavor": FLAVOR, "name": name, "idempotencyKey": name}
        answer = self.create("place", "/v1/instances", body)
        if answer is None:
            with self.ledger.lock:
                self.ledger.unacknowledged_places.add(name)
        elif answer.is_success:
            instance_id = answer.json()["id"]
            self.instances.append(instance_id)
            with self.ledger.lock:
                self.ledger.placed[name] = instance_id
                self.ledger.counts["writes"] += 1

    def delete(self) -> None:
        if not self.instances:
            return
        instance_id = self.instances.pop(self.rng.randrange(len(self.instances)))
        answer = self.send("DELETE", f"/v1/instances/{instance_id}")
        if answer.is_success:
            with self.ledger.lock:
                self.ledger.deleted.add(instance_id)
                self.ledger.counts["writes"] += 1

    def reserve(self) -> None:
        """A reservation with an idempotency key, sometimes sent again once answered."""
        key = self.name("rsv")
        body = {"pool": self.world.pool_id, "gpus": 1, "duration": "10m", "idempotencyKey": key}
        with self.ledger.lock:
            self.ledger.reserved[key] = set()
        answer = self.create("reservation", "/v1/reservations", body)
        if answer is None:
            with self.ledger.lock:
                self.ledger.unacknowledged_keys.add(key)
        elif answer.is_success:
            reservation_id = answer.json()["id"]
            self.reservations.append(reservation_id)
            with self.ledger.lock:
                self.ledger.reserved[key].add(reservation_id)
                self.ledger.counts["writes"] += 1
            # the same key again on another replica must answer the same reservation
            if self.rng.random() < 0.25:
                self._replay(key, body)

    def _replay(self, key: str, body: dict[str, Any]) -> None:
        answer = self.send("POST", "/v1/reservations", body)
        if answer.is_success:
            with self.ledger.lock:
                self.ledger.reserved[key].add(answer.json()["id"])
                self.ledger.counts["replays"] += 1

    def cancel(self) -> None:
        if not self.reservations:
            return
        reservation_id = self.reservations.pop(self.rng.randrange(len(self.reservations)))
        answer = self.send("POST", f"/v1/reservations/{reservation_id}/cancel")
        if answer.is_success:
            with self.ledger.lock:
                self.ledger.cancelled.add(reservation_id)
                self.ledger.counts["writes"] += 1

    def deploy(self) -> None:
        """Create a service, then start it (deploy without failing for capacity)."""
        name = self.name("svc")
        answer = self.send("POST", "/v1/services", {"workspace": "soak", "name": name})
        if not answer.is_success:
            return
        service_id = answer.json()["id"]
        with self.ledger.lock:
            self.ledger.services[name] = service_id
            self.ledger.counts["writes"] += 1
        started = self.send("POST", f"/v1/services/{service_id}/start")
        if started.is_success:
            with self.ledger.lock:
                self.ledger.deployed.add(service_id)
                self.ledger.counts["writes"] += 1

    def environment(self) -> None:
        """Create an environment on Medium, then move it to Large."""
        name = self.name("env")
        answer = self.send("POST", "/v1/environments", {"name": name, "size": "medium"})
        if not answer.is_success:
            return
        environment_id = answer.json()["id"]
        with self.ledger.lock:
            self.ledger.environments[name] = environment_id
            self.ledger.environment_sizes[environment_id] = {"medium", "large"}
            self.ledger.counts["writes"] += 1
        moved = self.send("PATCH", f"/v1/environments/{environment_id}", {"size": "large"})
        with self.ledger.lock:
            if moved.is_success:
                self.ledger.environment_sizes[environment_id] = {"large"}
                self.ledger.counts["writes"] += 1
            elif moved.status_code < 500:
                self.ledger.environment_sizes[environment_id] = {"medium"}


def _error_code(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return str(response.status_code)


def run_load(
    world: World, base_urls: list[str], *, workers: int, seconds: float, seed: int = 18
) -> Ledger:
    """`workers` client threads for `seconds`; returns what they were told."""
    ledger = Ledger()
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=Worker(n, world, base_urls, ledger, random.Random(seed + n), stop).run,
            name=f"soak worker {n}",
        )
        for n in range(workers)
    ]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return ledger
