"""The test hosts' own disk: what they write (each root file system's upper layer, each /persist) lives on
a file system made for the test bed, an ext4 image on a loop device mounted at STATE_DIR/hosts, as a fresh
VM's disk is. On this machine kind's own file system creating a file costs about 0.6 ms of kernel time
(`strace -c`: openat 594 us, mkdirat 736 us a call), so a venv of 22,578 files unpacked in 14 s there and
in 1.5-2 s on a fresh ext4 (measured 2026-12-04, BENCHMARKS.md section 17).

TRITON_TESTBED_HOSTS_DISK=state keeps the hosts' files in STATE_DIR itself instead."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from testbed.config import STATE_DIR, TestbedError, _log

ON_IMAGE = os.environ.get("TRITON_TESTBED_HOSTS_DISK", "image") != "state"
# Sparse: only what the hosts write takes room on this machine, and the mount's discard gives back what
# they delete (a reset's tree); a worker's bed holds four provisioned hosts at most (about 10 GiB).
IMAGE_BYTES = 64 << 30


def hosts_dir() -> Path:
    return STATE_DIR / "hosts"


def image_path() -> Path:
    return STATE_DIR / "hosts.img"


def mounted() -> None:
    """STATE_DIR/hosts ready for hosts: on its own file system, made and mounted where it is not yet."""
    hosts = hosts_dir()
    hosts.mkdir(parents=True, exist_ok=True)
    if not ON_IMAGE or os.path.ismount(hosts) or any(hosts.iterdir()):
        return  # (hosts already there: a bed made before, or where no image could be made; down clears it)
    image = image_path()
    image.unlink(missing_ok=True)  # a crash's leftover: nothing mounts it any more
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    made = subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-m", "0", "-L", "testbed-hosts", str(image)], capture_output=True, text=True
    )
    if made.returncode == 0:
        made = subprocess.run(["mount", "-o", "loop,discard", str(image), str(hosts)], capture_output=True, text=True)
    if made.returncode != 0:  # a machine without loop devices: slower, still correct
        image.unlink(missing_ok=True)
        _log(f"no disk image for the hosts ({made.stderr.strip()}): they write to {hosts} on this machine's disk")
        return
    _log(f"the hosts' disk: {image} (ext4, sparse) at {hosts}")


def released() -> None:
    """After every host's mount is gone (STATE_DIR/hosts with them): the image deleted, where there is one."""
    if os.path.ismount(hosts_dir()):
        raise TestbedError(f"{hosts_dir()} is still mounted; see /proc/self/mounts")
    image_path().unlink(missing_ok=True)
