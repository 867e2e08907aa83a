"""remote/_reuseport.py, the steering of an SO_REUSEPORT group a build upgrade's handover uses, on this
machine's kernel with sockets of the test's own: every new connection goes to the socket the program
names, whoever joined the group first; the sockets a process holds on a port, as /proc lists them."""

from __future__ import annotations

import os
import socket

import pytest

from remote._reuseport import listening, steer

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
        assert listening(os.getpid(), port) == [(socket.AF_INET, "127.0.0.1")] * 3
        steer(socket.AF_INET, "127.0.0.1", port, index, os.geteuid())
        assert len(listening(os.getpid(), port)) == 3  # the steering socket has left the group
        counts = _accepted(group, port, 40)
        assert counts[index] == 40, counts
    finally:
        for sock in group:
            sock.close()


def test_an_index_past_the_group_falls_back_to_the_kernels_spread() -> None:
    group, port = _group(2)
    try:
        steer(socket.AF_INET, "127.0.0.1", port, 5, os.geteuid())
        counts = _accepted(group, port, 40)
        assert sum(counts) == 40  # nothing refused: the kernel's own choice
    finally:
        for sock in group:
            sock.close()


def test_the_grpc_ports_v4_mapped_ipv6_group_is_found_and_steered() -> None:
    """Triton's gRPC listens on an IPv6 socket at ::ffff:127.0.0.1, three of them: found as /proc lists them."""
    group = []
    for _ in range(3):
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("::ffff:127.0.0.1", group[0].getsockname()[1] if group else 0))
        group.append(sock)
    port = group[0].getsockname()[1]
    for sock in group:
        sock.listen(64)
        sock.setblocking(False)
    try:
        assert listening(os.getpid(), port) == [(socket.AF_INET6, "::ffff:127.0.0.1")] * 3
        steer(socket.AF_INET6, "::ffff:127.0.0.1", port, 2, os.geteuid())
        assert _accepted(group, port, 30) == [0, 0, 30]
    finally:
        for sock in group:
            sock.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="root makes the steering socket as the server's user")
def test_root_steers_a_group_of_another_users_sockets_as_that_user() -> None:
    """The kernel admits to a group only sockets of its owner's uid: root's own socket is refused, root's
    socket made as that user (seteuid around its creation) joins, and root is root again after."""
    nobody = 65534
    os.seteuid(nobody)
    try:
        group, port = _group(2)
    finally:
        os.seteuid(0)
    try:
        with pytest.raises(OSError):  # EADDRINUSE: another user's group
            steer(socket.AF_INET, "127.0.0.1", port, 1, 0)
        steer(socket.AF_INET, "127.0.0.1", port, 1, nobody)
        assert os.geteuid() == 0
        assert _accepted(group, port, 20) == [0, 20]
    finally:
        for sock in group:
            sock.close()


def test_once_the_steered_to_socket_leaves_the_group_every_connection_goes_to_the_rest() -> None:
    """A handover's new server that fails is stopped even where steering back failed: its sockets leave the
    group, the program's index is then past its end, and the old server gets every connection."""
    group, port = _group(2)
    try:
        steer(socket.AF_INET, "127.0.0.1", port, 1, os.geteuid())
        group[1].close()
        assert _accepted(group[:1], port, 20) == [20]
    finally:
        group[0].close()
