"""Switch the front (HAProxy, tasks/server/front_plan.py) from one Triton server's slot to the other's, then wait until
the old slot holds no request in flight. Every backend's next request goes to the new slot at once; a
client's kept connection stays with HAProxy. Run as the server's user (HAProxy's runtime socket is
that user's: root never talks through a path that user can change).

    python3 front_switch.py SOCKET OLD NEW DRAIN_S

Prints what it did; exits 1 naming what HAProxy said where a command fails, 0 once switched (the old
slot drained, or DRAIN_S passed: the old server's own graceful stop then finishes what it still holds).
"""

import socket
import sys
import time

BACKENDS = ("http", "grpc", "metrics")


def said(path, *commands):
    """HAProxy's answer to these runtime commands, sent on one connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)
        sock.sendall(("; ".join(commands) + "\n").encode())
        out = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def in_flight(path, slot):
    """Requests the slot's servers hold now (current sessions plus queued), over every backend."""
    rows = said(path, "show stat -1 4 -1").splitlines()
    header = rows[0].lstrip("# ").split(",") if rows else []
    if "svname" not in header:
        raise RuntimeError(f"HAProxy's statistics have no server column: {rows[:1]}")
    at = {name: header.index(name) for name in ("pxname", "svname", "scur", "qcur")}
    total = 0
    for row in rows[1:]:
        fields = row.split(",")
        if len(fields) > max(at.values()) and fields[at["svname"]] == slot and fields[at["pxname"]] in BACKENDS:
            total += sum(int(fields[at[name]] or 0) for name in ("scur", "qcur"))
    return total


def main(path, old, new, drain_s):
    commands = []
    for backend in BACKENDS:
        commands += [f"set server {backend}/{new} state ready", f"set server {backend}/{old} state maint"]
    answer = said(path, *commands).strip()
    if answer:
        print(f"the front refused the switch to {new}: {answer[:500]}", file=sys.stderr)
        return 1
    deadline = time.monotonic() + float(drain_s)
    held = in_flight(path, old)
    while held and time.monotonic() < deadline:
        time.sleep(0.1)
        held = in_flight(path, old)
    where = f"{held} request(s) still in flight there" if held else "nothing in flight there"
    print(f"front: every request to the new server ({new}); the old one ({old}): {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
