"""Name a handover's new server the main process of its systemd unit, once it is proven: the unit then
follows it (its restart on failure, its stop, `systemctl status`), and the old server, no longer the
unit's main process, can stop without systemd restarting anything. Run as root: the unit takes
notifications from its main process only (NotifyAccess=main), so root sends MAINPID= in that process's
name (SCM_CREDENTIALS: a privileged sender may give any pid); the models' code in the unit cannot.

    python3 systemd_main_pid.py UNIT NEW_PID_FILE
"""

import socket
import struct
import subprocess
import sys
import time

NOTIFY_SOCKET = "/run/systemd/notify"


def main_pid(unit):
    out = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def main(unit, new_pid_file):
    with open(new_pid_file) as f:
        new = int(f.read().strip())
    old = main_pid(unit)
    if old == new:
        return 0
    try:
        with open(f"/proc/{new}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ")
    except OSError:
        command = b""
    # still the proven server (not a pid used again since), and no python backend stub of it
    if not old or b"tritonserver" not in command or b"triton_python_backend_stub" in command:
        print(f"{unit}: no main process ({old}) or no new server (pid {new}) to hand over to", file=sys.stderr)
        return 1
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    credentials = struct.pack("3i", old, 0, 0)  # pid, uid, gid: from the unit's main process, as root
    sock.sendmsg(
        [f"MAINPID={new}".encode()], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)], 0, NOTIFY_SOCKET
    )
    deadline = time.monotonic() + 10
    while main_pid(unit) != new:  # systemd reads the notification in its own time
        if time.monotonic() > deadline:
            print(f"{unit} did not take Triton pid {new} as its main process (still {main_pid(unit)})", file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(f"{unit}: its main process is now Triton pid {new} (was {old})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
