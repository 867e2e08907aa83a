"""A slow /persist for a test host: a FUSE passthrough over the host's persistent directory that
moves at most RATE bytes a second each way and waits LATENCY at every open, create and remove,
like the network drive a notebook's persistent path really is (tens of MB/s, a round trip per file).

    python -m testbed throttle tb1 --mbps 60 [--latency-ms 2] [--drive]   # then the host reboots onto it
    python -m testbed throttle tb1 --mbps 0                             # back to the plain directory

--drive: with Google Drive's semantics as Colab mounts it (no links; root's 0600 files and 0700 folders
whatever chmod asks; nothing executable), the notebook bed's persistent path (tests/e2e/test_notebook_inside.py).

The host's files move to `persist-backing` beside its mount point; the FUSE daemon (this module,
run as `python -m testbed.throttle BACKING MOUNT RATE LATENCY`) serves them at `persist`, which the
host binds at /persist when it boots. Without kernel caching of file contents across opens, every
file opened after a reset is read through the limit, as from a cold network drive.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from testbed.config import Host, TestbedError

CHUNK = 128 << 10  # FUSE's largest read and write here (max_read, max_write)


def _operations(backing: str, rate: float, latency: float, drive: bool = False):
    """The passthrough (testbed/throttle_fs.py: fusepy's Operations over BACKING), reads and writes through two
    buckets; drive: with Google Drive's semantics as Colab mounts it."""
    from testbed.throttle_fs import Drive, Throttled

    return (Drive if drive else Throttled)(backing, rate, latency)


def serve(backing: str, mount: str, rate: float, latency: float, drive: bool = False) -> None:
    """Run the FUSE daemon in the foreground until the mount is unmounted."""
    from fuse import FUSE

    FUSE(
        _operations(backing, rate, latency, drive),
        mount,
        foreground=True,
        nothreads=False,
        allow_other=True,
        default_permissions=True,
        use_ino=True,
        big_writes=True,
        max_read=CHUNK,
        max_write=CHUNK,
        # Colab mounts its Drive as `drive` of type fuse.drive: with --drive the mount reads the same (findmnt)
        fsname="drive" if drive else "testbed-throttle",
        **({"subtype": "drive"} if drive else {}),
    )


def _paths(host: Host) -> tuple[Path, Path]:
    return host.persist, host.dir / "persist-backing"


def mount(host: Host, mbps: float, latency_ms: float, drive: bool = False) -> None:
    """Serve the host's persistent directory through the limit (its files kept, moved aside); drive: with
    Google Drive's semantics (Drive)."""
    mount_point, backing = _paths(host)
    if os.path.ismount(mount_point):
        unmount(host)
    mount_point.rename(backing)
    mount_point.mkdir()
    log = open(host.dir / "throttle.log", "ab")  # noqa: SIM115 - handed to the child
    args = [str(backing), str(mount_point), str(mbps * 1e6), str(latency_ms / 1000), *(["drive"] if drive else [])]
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.throttle", *args],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    deadline = time.monotonic() + 15
    while not os.path.ismount(mount_point):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            mount_point.rmdir()
            backing.rename(mount_point)
            tail = (host.dir / "throttle.log").read_text(errors="replace").splitlines()[-5:]
            raise TestbedError(f"the throttled /persist of {host.name} did not mount: {' | '.join(tail)}")
        time.sleep(0.05)
    (host.dir / "throttle.pid").write_text(str(proc.pid))


def unmount(host: Host) -> None:
    """Back to the plain directory: unmount (the daemon then exits) and move the files back."""
    mount_point, backing = _paths(host)
    if os.path.ismount(mount_point):
        subprocess.run(["umount", str(mount_point)], check=True)
    pid_file = host.dir / "throttle.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid_file.unlink()
    if backing.is_dir():
        mount_point.rmdir()
        backing.rename(mount_point)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5:6] == ["drive"])
