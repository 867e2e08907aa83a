"""Reaching a running test host from a test or a benchmark: its pyinfra data, ssh as root, reset."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from testbed.config import Host
from testbed.hosts import reset
from testbed.inventory import host_data


@dataclass
class TestHost:
    """A running test host and the ways to reach it."""

    __test__ = False

    host: Host

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def data(self) -> dict:
        return host_data(self.host)

    def ssh_argv(self, *command: str) -> list[str]:
        """The ssh command line that runs COMMAND on the host as root (host key checked)."""
        d = self.data
        return [
            "ssh",
            "-i",
            d["ssh_key"],
            "-p",
            str(d["ssh_port"]),
            "-o",
            f"UserKnownHostsFile={d['ssh_known_hosts_file']}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            f"root@{d['ssh_hostname']}",
            *command,
        ]

    def ssh(self, command: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a shell command on the host over SSH (host key checked); stdin closed."""
        argv = self.ssh_argv(command)
        return subprocess.run(argv, check=check, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)

    def reset(self) -> None:
        self.host = reset(self.name)
