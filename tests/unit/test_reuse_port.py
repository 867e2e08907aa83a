"""bench/reuse_port.py's steering of an SO_REUSEPORT group, on this machine's kernel with sockets of the
test's own: every new connection goes to the socket the program names, whoever joined the group first."""

from __future__ import annotations

import os
import socket

import pytest

from bench.reuse_port import listeners, steer

pytestmark = pytest.mark.unit


def _group(count: int) -> tuple[list[socket.socket], int]:
    first = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    first.bind(("127.0.0.1", 0))
    port = first.getsockname()[1]
    group = [first]
    for _ in range(count - 1):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        group.append(sock)
    for sock in group:
        sock.listen(64)
        sock.setblocking(False)
    return group, port


def _accepted(group: list[socket.socket], port: int, connections: int) -> list[int]:
    """How many of `connections` new connections each socket of the group accepted."""
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    counts = [0] * len(group)
    for i, sock in enumerate(group):
        while True:
            try:
                conn, _ = sock.accept()
            except BlockingIOError:
                break
            conn.close()
            counts[i] += 1
    for client in clients:
        client.close()
    return counts


@pytest.mark.parametrize("index", [1, 2])
def test_every_new_connection_goes_to_the_socket_the_program_names(index: int) -> None:
    group, port = _group(3)
    try:
        assert listeners(os.getpid(), port) == 3
        steer(socket.AF_INET, "127.0.0.1", port, index)
        assert listeners(os.getpid(), port) == 3  # the steering socket has left the group
        counts = _accepted(group, port, 40)
        assert counts[index] == 40, counts
    finally:
        for sock in group:
            sock.close()


def test_an_index_past_the_group_falls_back_to_the_kernels_spread() -> None:
    group, port = _group(2)
    try:
        steer(socket.AF_INET, "127.0.0.1", port, 5)
        counts = _accepted(group, port, 40)
        assert sum(counts) == 40  # nothing refused: the kernel's own choice
    finally:
        for sock in group:
            sock.close()
