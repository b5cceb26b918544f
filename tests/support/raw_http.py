"""HTTP/1.1 over raw sockets on 127.0.0.1, for what an ordinary client will not send: made-up
methods pipelined by the thousand, and heads sent a line at a time (the edge tests)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

READ_TIMEOUT = 10.0


def pipelined(port: int, requests: Sequence[tuple[str, str]], *, batch: int = 200) -> int:
    """Sends (method, path) requests on one keep-alive connection, `batch` at a time, and
    reads every answer; returns how many answers came back."""
    answered = 0
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT) as sock:
        for start in range(0, len(requests), batch):
            chunk = requests[start : start + batch]
            sock.sendall(
                b"".join(
                    f"{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode()
                    for method, path in chunk
                )
            )
            answered += _read_answers(sock, len(chunk))
    return answered


def ask(sock: socket.socket, method: str = "GET", path: str = "/healthz") -> bytes:
    """One request on an open connection; its whole answer's head."""
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(1 << 16)
        if not data:
            break
        buffer += data
    head, _, body = buffer.partition(b"\r\n\r\n")
    missing = _content_length(head) - len(body)
    while missing > 0:
        data = sock.recv(missing)
        if not data:
            break
        missing -= len(data)
    return head


def _read_answers(sock: socket.socket, wanted: int) -> int:
    """Reads until `wanted` complete answers (each with a Content-Length) have arrived."""
    buffer = b""
    seen = 0
    while seen < wanted:
        data = sock.recv(1 << 16)
        if not data:
            break
        buffer += data
        while True:
            head_end = buffer.find(b"\r\n\r\n")
            if head_end < 0:
                break
            length = _content_length(buffer[:head_end])
            if len(buffer) < head_end + 4 + length:
                break
            buffer = buffer[head_end + 4 + length :]
            seen += 1
    return seen


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def pipelined_in_parallel(
    port: int, requests: Sequence[tuple[str, str]], *, connections: int = 4
) -> int:
    """The requests spread over a few connections at once; returns how many were answered."""
    shares = [requests[i::connections] for i in range(connections)]
    with ThreadPoolExecutor(connections) as pool:
        return sum(pool.map(lambda share: pipelined(port, share), shares))


def open_slow(port: int, count: int) -> list[socket.socket]:
    """`count` connections, each having sent the start of a request head and no more."""
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        sockets.append(sock)
    return sockets


def is_closed_by_server(sock: socket.socket, *, wait: float) -> bool:
    """Whether the server closed the connection (EOF or reset) within `wait` seconds."""
    sock.settimeout(max(wait, 0.01))
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
