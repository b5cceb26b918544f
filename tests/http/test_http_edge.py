"""The edge of `fleet serve` on a real server on 127.0.0.1: a request head has a deadline, an
idle connection has one, connections stop below the descriptor limit, and running out of
descriptors logs a line, not a traceback per attempt."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.edge import EdgeLimits, connection_limit
from bcfleet.http.server import BackgroundServer
from bcfleet.settings import load_fleet_settings
from tests.support.fleet import python_cli
from tests.support.raw_http import ask, is_closed_by_server, open_slow, pipelined
from tests.support.waiting import wait_for, wait_until

SLOW = 500
HEADER_TIMEOUT = 1.5


@contextlib.contextmanager
def descriptors(at_least: int) -> Iterator[None]:
    """This process's soft descriptor limit raised to `at_least` (within the hard limit) for a while."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = at_least if hard == resource.RLIM_INFINITY else min(at_least, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def edge(
    header_timeout: float = HEADER_TIMEOUT, keepalive: int = 5, most: int = 1000
) -> EdgeLimits:
    return EdgeLimits(header_timeout=header_timeout, keepalive=keepalive, max_connections=most)


def test_slow_heads_are_closed_and_a_normal_call_still_answers_within_a_second(
    fleet: Fleet,
) -> None:
    with (
        descriptors(4 * SLOW),
        BackgroundServer(create_app(fleet, tally_seconds=0), limits=edge()) as server,
    ):
        opened = time.monotonic()
        slow = open_slow(server.port, SLOW)
        try:
            started = time.monotonic()
            answer = httpx.get(f"{server.url}/healthz", timeout=5)
            assert answer.status_code == 200 and time.monotonic() - started < 1.0
            for line in (b"X-a: 1\r\n", b"X-b: 2\r\n"):  # a header line now and then
                time.sleep(0.3)
                for sock in slow:
                    sock.sendall(line)
            deadline = opened + HEADER_TIMEOUT + 3.0
            still_open = [
                s for s in slow if not is_closed_by_server(s, wait=deadline - time.monotonic())
            ]
            assert not still_open, f"{len(still_open)} of {SLOW} slow connections are still open"
        finally:
            for sock in slow:
                sock.close()


def test_a_slow_head_after_a_kept_alive_answer_is_closed_too(fleet: Fleet) -> None:
    limits = edge(header_timeout=0.5, keepalive=60)
    with (
        BackgroundServer(create_app(fleet, tally_seconds=0), limits=limits) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock,
    ):
        assert b" 200 " in ask(sock)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next head, never finished
        assert is_closed_by_server(sock, wait=5)


def test_an_idle_kept_alive_connection_is_closed(fleet: Fleet) -> None:
    with (
        BackgroundServer(create_app(fleet, tally_seconds=0), limits=edge(keepalive=1)) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock,
    ):
        assert b" 200 " in ask(sock)
        assert is_closed_by_server(sock, wait=5)


def test_connections_past_the_limit_are_closed_at_once(fleet: Fleet) -> None:
    limits = edge(header_timeout=30, most=20)
    with BackgroundServer(create_app(fleet, tally_seconds=0), limits=limits) as server:
        held = open_slow(server.port, 20)
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as extra:
                assert is_closed_by_server(extra, wait=5)
        finally:
            for sock in held:
                sock.close()
        wait_until(lambda: pipelined(server.port, [("GET", "/healthz")]) == 1, timeout=5)


@pytest.mark.parametrize(
    ("wanted", "fd_limit", "allowed"),
    [
        pytest.param(1000, 20_000, 1000, id="the setting under a large limit"),
        pytest.param(1000, 1024, 768, id="ulimit -n 1024 keeps 256 descriptors"),
        pytest.param(1000, 256, 192, id="a small limit keeps a quarter"),
        pytest.param(5, 8, 5, id="a small setting"),
        pytest.param(1000, resource.RLIM_INFINITY, 1000, id="no limit"),
    ],
)
def test_the_connection_limit_stays_below_the_descriptor_limit(
    wanted: int, fd_limit: int, allowed: int
) -> None:
    assert connection_limit(wanted, fd_limit) == allowed


def test_running_out_of_descriptors_logs_one_line_not_a_traceback_per_accept(
    fleet: Fleet, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with BackgroundServer(create_app(fleet, tally_seconds=0), limits=edge()) as server:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        clients: list[socket.socket] = []
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 6, hard))
        try:
            with contextlib.suppress(OSError):  # until this process has no descriptor left
                for _ in range(20):
                    clients.append(socket.create_connection(("127.0.0.1", server.port), 2))
            wait_until(lambda: "accept" in caplog.text, timeout=5, what="a failed accept")
            time.sleep(1.2)  # asyncio tries the accept again after a second
        finally:
            for sock in clients:
                sock.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert pipelined(server.port, [("GET", "/healthz")]) == 1
    accepts = [r for r in caplog.records if "accept" in r.getMessage()]
    assert len(accepts) == 1, f"{len(accepts)} lines about accept()"
    assert accepts[0].exc_info is None and "Traceback" not in caplog.text
    assert "Too many open files" in accepts[0].getMessage()


def test_what_clients_send_wrong_is_logged_a_line_at_a_time(
    fleet: Fleet, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with (
        BackgroundServer(create_app(fleet, tally_seconds=0), limits=edge()) as server,
        uvicorn_logs(caplog),
    ):
        for _ in range(50):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
                sock.sendall(b"GET / HTTP/1.1\r\nbad header\r\n\r\n")
                assert b" 400 " in ask_nothing(sock)
        assert pipelined(server.port, [("GET", "/healthz")]) == 1
    invalid = [r for r in caplog.records if "Invalid HTTP request" in r.getMessage()]
    assert len(invalid) == 1, f"{len(invalid)} lines for 50 invalid requests"


@contextlib.contextmanager
def uvicorn_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """uvicorn's own log in caplog (its loggers stop at "uvicorn", short of the root)."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(caplog.handler)
    try:
        yield
    finally:
        uvicorn_log.removeHandler(caplog.handler)


def ask_nothing(sock: socket.socket) -> bytes:
    """Whatever the server answers before it closes the connection."""
    received = b""
    while data := sock.recv(4096):
        received += data
    return received


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("BCFLEET_HTTP_HEADER_TIMEOUT_SECONDS", "0", id="no header time"),
        pytest.param("BCFLEET_HTTP_KEEPALIVE_SECONDS", "1.5", id="keep-alive in whole seconds"),
        pytest.param("BCFLEET_HTTP_MAX_CONNECTIONS", "0", id="no connection"),
    ],
)
def test_edge_settings_out_of_bounds_are_invalid_input(variable: str, value: str) -> None:
    with pytest.raises(InvalidInputError, match="setting"):
        load_fleet_settings(path=Path("/nonexistent/fleet.toml"), environ={variable: value})


def test_the_edge_settings_come_from_fleet_toml_then_the_environment(tmp_path: Path) -> None:
    toml = tmp_path / "fleet.toml"
    toml.write_text("[fleet]\nhttp_header_timeout_seconds = 4.5\nhttp_max_connections = 300\n")
    settings = load_fleet_settings(toml, {"BCFLEET_HTTP_KEEPALIVE_SECONDS": "9"})
    assert EdgeLimits.of(settings) == EdgeLimits(4.5, 9, 300)
    assert EdgeLimits.of(load_fleet_settings(tmp_path / "none", {})) == EdgeLimits(10.0, 5, 1000)


@pytest.mark.slow
def test_fleet_serve_closes_a_slow_head_after_its_header_timeout(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = python_cli("serve", "--port", str(port), "--log-level", "warning",
                      db=f"sqlite:///{tmp_path / 'fleet.db'}")  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "BCFLEET_HTTP_HEADER_TIMEOUT_SECONDS": "1"}
    server = subprocess.Popen(argv, env=env, cwd=tmp_path, stderr=subprocess.PIPE)
    try:

        def health() -> httpx.Response | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            except httpx.HTTPError:
                return None

        assert wait_for(health, what="the server").status_code == 200
        [slow] = open_slow(port, 1)
        with slow:
            assert is_closed_by_server(slow, wait=5)
    finally:
        server.send_signal(signal.SIGINT)
        _out, err = server.communicate(timeout=15)
    assert server.returncode == 0 and b"Traceback" not in err, err.decode()[-2000:]
