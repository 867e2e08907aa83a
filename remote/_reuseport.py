# Shared by reuseport_steer.py and wait_ready.py (inlined where a script imports it): which listening
# sockets a process holds on a port, and steering that port's SO_REUSEPORT group, so that the kernel hands
# every new connection to one socket of it (a build upgrade's two servers: the old one until the new one
# is proven, then the new one; bench/reuse_port.py measured it: 0 failed requests, 125-190 without).
import ctypes
import os
import socket
import struct

SO_ATTACH_REUSEPORT_CBPF = 51  # <asm-generic/socket.h>, Linux >= 4.5
BPF_RET_K = 0x06  # BPF_RET | BPF_K: the program returns the constant k, the socket's index in the group


def _v6_address(hex_address):
    """/proc/net/tcp6's address (4 little-endian 32-bit words) as text."""
    raw = b"".join(struct.pack("<I", int(hex_address[i : i + 8], 16)) for i in range(0, 32, 8))
    return socket.inet_ntop(socket.AF_INET6, raw)


def listening(pid, port):
    """[(family, address)] of each listening TCP socket pid holds on port, in the order /proc lists them."""
    inodes = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            address, _, hex_port = local.rpartition(":")
            if state != "0A" or int(hex_port, 16) != port:
                continue
            if family == socket.AF_INET:
                text = socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(address, 16)))
            else:
                text = _v6_address(address)
            inodes[inode] = (family, text)
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            found.append(inodes[target[8:-1]])
    return found


def steer(family, address, port, index, uid):
    """Every new connection to (address, port) goes to socket `index` of its SO_REUSEPORT group: a socket of
    uid's (the group admits only its owner's) joins, attaches `return index`, and leaves; the program stays
    with the group. An index past the group's end falls back to the kernel's own spread."""
    saved = os.geteuid()
    if uid != saved:
        os.seteuid(uid)  # root makes the socket as the server's user, then is root again
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    finally:
        if uid != saved:
            os.seteuid(saved)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address, port))
        sock.listen(1)
        program = (ctypes.c_uint8 * 8).from_buffer_copy(struct.pack("HBBI", BPF_RET_K, 0, 0, index))
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, struct.pack("@HP", 1, ctypes.addressof(program)))
    finally:
        sock.close()


def steer_ports(owner_pid, ports, index_of, uid):
    """Steer each port's group to index_of(count of owner's sockets on it), at the owner's own address."""
    for port in ports:
        held = listening(owner_pid, port)
        if not held:
            raise RuntimeError(f"Triton pid {owner_pid} holds no listening socket on port {port}")
        family, address = held[0]
        steer(family, address, port, index_of(len(held)), uid)
