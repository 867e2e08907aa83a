"""The test bed's settings (environment variables), the Host record and the helpers every module uses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Where hosts live while they run, and where release tarballs are cached between runs.
STATE_DIR = Path(os.environ.get("TRITON_TESTBED_DIR", "/var/tmp/triton-testbed"))
CACHE_DIR = Path(os.environ.get("TRITON_TESTBED_CACHE", "/var/cache/triton-testbed"))
DEBIAN_MIRROR = os.environ.get("TRITON_TESTBED_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# What a fresh host has: what a minimal cloud image or a notebook's Python has, no more.
BASE_PACKAGES = ("python3", "python3-venv", "openssh-server", "ca-certificates")
# What a VM image adds: systemd as init, D-Bus for logind, sudo for its admin user.
SYSTEMD_PACKAGES = ("systemd", "systemd-sysv", "dbus", "sudo")
# What a notebook image adds: zstd, which Ubuntu images (Colab's among them) ship; the VM image,
# like Debian's own, has none (the venv snapshot then falls back to gzip: both paths are tested).
NOTEBOOK_PACKAGES = ("zstd",)
INITS = ("none", "systemd")
CGROUP = Path("/sys/fs/cgroup")
FIRST_SSH_PORT = 2201
PERSIST_PATH = "/persist"
_RELEASE_RE = re.compile(r"^[a-z]+$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class TestbedError(RuntimeError):
    """A testbed step failed; the message says which and what to do."""


@dataclass
class Host:
    """One test host: its name, release, SSH port and the process that holds it."""

    name: str
    release: str
    ssh_port: int
    pid: int = 0
    init: str = "none"  # "none": sshd is PID 1; "systemd": systemd is, sshd one of its units
    user: str = "root"  # the SSH user; another one has passwordless sudo

    @property
    def dir(self) -> Path:
        return STATE_DIR / "hosts" / self.name

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def persist(self) -> Path:
        """The persistent directory on this machine, mounted at /persist in the host."""
        return self.dir / "persist"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def _log(msg: str) -> None:
    print(f"[testbed] {msg}", file=sys.stderr, flush=True)
