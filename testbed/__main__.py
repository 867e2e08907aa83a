"""The test bed's command line: python -m testbed up|reset|restart|throttle|remove|down|status."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import testbed
from testbed.boot import _process_alive
from testbed.config import INITS, TestbedError
from testbed.hosts import down, remove, reset, restart, throttle, up
from testbed.inventory import inventory_path
from testbed.state import load_hosts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed", description=testbed.__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start fresh hosts and write their pyinfra inventory")
    p_up.add_argument("--hosts", type=int, default=1)
    p_up.add_argument("--release", default="bookworm")
    p_up.add_argument("--init", choices=INITS, default="none", help="systemd: boot systemd as PID 1 (a VM)")
    p_up.add_argument("--user", default="root", help="log in as this user with passwordless sudo (needs systemd)")
    p_up.add_argument("--prefix", default="tb", help="host names: PREFIX1, PREFIX2 ...")
    p_up.add_argument("--fresh", action="store_true", help="first take down the hosts the bed holds")
    p_reset = sub.add_parser("reset", help="restore a host's root fs to fresh, keep /persist")
    p_reset.add_argument("name")
    p_restart = sub.add_parser("restart", help="stop a host and boot it again, its disk kept (a reboot)")
    p_restart.add_argument("name")
    p_remove = sub.add_parser("remove", help="stop and delete one host")
    p_remove.add_argument("name")
    p_slow = sub.add_parser("throttle", help="serve a host's /persist slowly, as a network drive (it reboots)")
    p_slow.add_argument("name")
    p_slow.add_argument("--mbps", type=float, default=60.0, help="MB/s each way; 0: unthrottled again")
    p_slow.add_argument("--latency-ms", type=float, default=2.0, help="wait at each open, create, remove")
    p_slow.add_argument("--drive", action="store_true", help="with Google Drive's semantics (no links, modes)")
    sub.add_parser("down", help="stop and delete every host")
    sub.add_parser("status", help="list the hosts")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("the testbed mounts file systems and makes namespaces: run it as root")
    try:
        if args.cmd == "up":
            up(args.hosts, args.release, args.prefix, args.init, args.user, fresh=args.fresh)
            print(inventory_path())
        elif args.cmd == "reset":
            reset(args.name)
        elif args.cmd == "restart":
            restart(args.name)
        elif args.cmd == "remove":
            remove(args.name)
        elif args.cmd == "throttle":
            throttle(args.name, args.mbps, args.latency_ms, args.drive)
        elif args.cmd == "down":
            down()
        else:
            for h in load_hosts():
                alive = "up" if _process_alive(h.pid, str(h.root)) else "down"
                print(f"{h.name}\t{h.release}\t{h.init}\t{h.user}@127.0.0.1:{h.ssh_port}\t{alive}")
    except (TestbedError, subprocess.CalledProcessError) as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
