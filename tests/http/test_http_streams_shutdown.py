"""`fleet serve` stopped with streams open: each stream ends cleanly at once, and the log holds no
traceback (it once printed one "Exception in ASGI application" per stream)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

from bcfleet.clock import SystemClock
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from tests.support.compute import waiting_services
from tests.support.fleet import python_cli
from tests.support.waiting import wait_for

DEPLOYS, EVENT_STREAMS = 4, 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def a_fleet_with_waiting_services(url: str) -> tuple[str, list[str]]:
    fleet = Fleet.open(
        url, clock=SystemClock(), settings=FleetSettings(db_url=url), ids=IdFactory()
    )
    try:
        return waiting_services(fleet, "t1", DEPLOYS)
    finally:
        fleet.close()


def started(port: int) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
    except httpx.HTTPError:
        return None


def test_stopping_fleet_serve_ends_open_streams_without_a_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    admin, services = a_fleet_with_waiting_services(url)
    port = free_port()
    argv = python_cli("serve", "--port", str(port), db=url)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    server = subprocess.Popen(argv, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    headers = {"Authorization": f"Bearer {admin}"}
    try:
        wait_for(lambda: started(port), what="the server")
        with (
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http,
            ExitStack() as s,
        ):
            streams = [
                s.enter_context(http.stream("POST", f"/v1/services/{service}/deploy/stream"
                                            "?pollSeconds=60", headers=headers))
                for service in services
            ] + [
                s.enter_context(http.stream("GET", "/v1/events/stream", headers=headers))
                for _ in range(EVENT_STREAMS)
            ]  # fmt: skip
            lines = [r.iter_lines() for r in streams]  # kept: one dropped closes its connection
            assert [r.status_code for r in streams] == [200] * (DEPLOYS + EVENT_STREAMS)
            assert json.loads(next(lines[0]))["phase"] == "no-capacity"
            assert next(lines[-1]).startswith("retry:")
            stopping = time.monotonic()
            server.send_signal(signal.SIGINT)
            for each in lines:  # every stream ends, cleanly, at once
                list(each)
            ended = time.monotonic() - stopping
        server.wait(15)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(5)
    log = server.stderr.read() if server.stderr else ""
    assert server.returncode == 0, log
    assert "Exception in ASGI application" not in log, log
    assert "Traceback" not in log, log
    assert ended < 2.0, ended  # not after the graceful shutdown's 5 seconds, cancelled
