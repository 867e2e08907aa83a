"""Disposable Debian test hosts on this machine, reached over real SSH; no Docker.

Each host is an overlay root file system over a cached, unpacked debootstrap tarball,
run in private PID and mount namespaces with sshd on a loopback port: sshd is PID 1 (a
notebook), or with `--init systemd` systemd is (a VM: its own UTS, IPC and cgroup
namespaces, a writable cgroup subtree, `container=testbed`; sshd is a unit). `--user`
logs in as a user with passwordless sudo instead of root. `reset` wipes the overlay (a
notebook reset) and keeps `/persist`; `restart` stops a host and boots it again with its
root file system kept (a reboot); `down` kills each host's namespace by the process id it
recorded, unmounts and deletes. Usage:

    python -m testbed up --hosts 2 [--release bookworm] [--init systemd] [--user ops] [--fresh]
    python -m testbed reset tb1
    python -m testbed restart tb1
    python -m testbed remove tb1
    python -m testbed status
    python -m testbed down

Modules, one concern each: config (settings, the Host record), images (release bases), state (the
lock and hosts file), disk (the file system the hosts write to), identity (keys, users), boot
(namespaces, PID 1, stop), hosts (the commands), inventory (the one inventory writer), access
(TestHost: ssh to a host), runner (the one pyinfra runner), mirror and proxy (loopback stand-ins for
download sources and a corporate proxy).
"""

from testbed.access import TestHost
from testbed.config import CACHE_DIR, PERSIST_PATH, STATE_DIR, Host, TestbedError
from testbed.hosts import down, remove, reset, restart, up
from testbed.identity import client_key
from testbed.images import ensure_base
from testbed.inventory import (
    host_data,
    host_index,
    inventory_path,
    known_hosts,
    named_ports,
    triton_ports,
    write_inventory,
)
from testbed.runner import REPO, op_results, run_pyinfra, run_pyinfra_lines
from testbed.state import load_hosts

__all__ = [
    "CACHE_DIR",
    "PERSIST_PATH",
    "REPO",
    "STATE_DIR",
    "Host",
    "TestHost",
    "TestbedError",
    "client_key",
    "down",
    "ensure_base",
    "host_data",
    "host_index",
    "inventory_path",
    "known_hosts",
    "load_hosts",
    "named_ports",
    "op_results",
    "remove",
    "reset",
    "restart",
    "run_pyinfra",
    "run_pyinfra_lines",
    "triton_ports",
    "up",
    "write_inventory",
]
