"""The test bed's settings (environment variables), the Host record and the helpers every module uses."""

from __future__ import annotations

import fcntl
import functools
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from testbed.ports import this_bed

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
# Each parallel test worker (pytest-xdist) has its own STATE_DIR and ranges of ports (tests/conftest.py,
# the plan in testbed/ports.py): SSH ports FIRST_SSH_PORT..LAST_SSH_PORT, PORT_OFFSET added to each
# host's Triton ports.
_BED = this_bed()
FIRST_SSH_PORT, LAST_SSH_PORT, PORT_OFFSET = _BED.ssh_first, _BED.ssh_last, _BED.triton_offset
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


_P = ParamSpec("_P")
_R = TypeVar("_R")
_held = 0  # cache_lock's depth in this process (a builder may call another)


@contextmanager
def cache_lock() -> Iterator[None]:
    """One builder of the shared caches (CACHE_DIR) at a time, across processes: parallel test workers
    that both find a base or an artifact missing build it once, the second then finding it there."""
    global _held
    if _held:
        _held += 1
        try:
            yield
        finally:
            _held -= 1
        return
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _held = 1
        try:
            yield
        finally:
            _held = 0


def cache_built(build: Callable[_P, _R]) -> Callable[_P, _R]:
    """build runs under cache_lock (it makes or finds something in CACHE_DIR)."""

    @functools.wraps(build)
    def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with cache_lock():
            return build(*args, **kwargs)

    return locked
