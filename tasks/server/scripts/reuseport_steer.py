"""Hand every new connection to the server ports to the running server's first socket: before a build
upgrade starts its new server beside it (which must get nothing until proven), and when that new server
fails (back to the old one, which never stopped serving). Run as root; the steering socket is the server
user's (remote/_reuseport.py).

    python3 reuseport_steer.py USER PID_FILE PORT...
"""

import pwd
import sys

from _reuseport import steer_ports


def main(user, pid_file, *ports):
    with open(pid_file) as f:
        pid = int(f.read().strip())
    steer_ports(pid, [int(p) for p in ports], lambda held: 0, pwd.getpwnam(user).pw_uid)
    print(f"new connections to ports {', '.join(ports)}: Triton pid {pid} alone", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
