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

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from testbed.config import Host, TestbedError

CHUNK = 128 << 10  # FUSE's largest read and write here (max_read, max_write)


class Bucket:
    """A link of RATE bytes a second: each transfer waits until the bytes before it, and its own,
    would have passed."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.free_at = 0.0
        self.lock = threading.Lock()

    def take(self, n: int) -> None:
        with self.lock:
            now = time.monotonic()
            self.free_at = max(self.free_at, now) + n / self.rate
            until = self.free_at
        delay = until - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def _operations(backing: str, rate: float, latency: float, drive: bool = False):
    """The passthrough (fusepy's Operations over BACKING), reads and writes through two buckets; drive: with
    Google Drive's semantics as Colab mounts it (Drive, below)."""
    import stat

    from fuse import FuseOSError, Operations, fuse_get_context

    class Throttled(Operations):
        use_ns = True

        def __init__(self) -> None:
            self.root = os.path.realpath(backing)
            self.reads, self.writes = Bucket(rate), Bucket(rate)

        def _full(self, path: str) -> str:
            return self.root + path

        def __call__(self, op, path, *args):
            try:
                return super().__call__(op, self._full(path) if path is not None else path, *args)
            except OSError as exc:
                raise FuseOSError(exc.errno or errno.EIO) from None

        def _owned(self, path: str) -> None:
            """A new entry belongs to whoever made it (the daemon runs as root)."""
            uid, gid, _ = fuse_get_context()
            os.lchown(path, uid, gid)

        def access(self, path, mode):
            if not os.access(path, mode):
                raise FuseOSError(errno.EACCES)

        def chmod(self, path, mode):
            return os.chmod(path, mode)

        def chown(self, path, uid, gid):
            return os.lchown(path, uid, gid)

        def create(self, path, mode, fi=None):
            time.sleep(latency)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            self._owned(path)
            return fd

        def flush(self, path, fh):
            return 0

        def fsync(self, path, datasync, fh):
            return os.fdatasync(fh) if datasync else os.fsync(fh)

        def getattr(self, path, fh=None):
            st = os.lstat(path)
            keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
            out = {k: getattr(st, k) for k in keys}
            out.update(st_ino=st.st_ino, st_blocks=st.st_blocks)
            out.update({k: getattr(st, k + "_ns") for k in ("st_atime", "st_ctime", "st_mtime")})
            return out

        def link(self, target, source):
            return os.link(self._full(source), target)

        def mkdir(self, path, mode):
            time.sleep(latency)
            os.mkdir(path, mode)
            self._owned(path)

        def mknod(self, path, mode, dev):
            os.mknod(path, mode, dev)
            self._owned(path)

        def open(self, path, flags):
            time.sleep(latency)
            return os.open(path, flags)

        def read(self, path, size, offset, fh):
            data = os.pread(fh, size, offset)
            self.reads.take(len(data))
            return data

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(path)]

        def readlink(self, path):
            return os.readlink(path)

        def release(self, path, fh):
            return os.close(fh)

        def rename(self, old, new):
            return os.rename(old, self._full(new))

        def rmdir(self, path):
            time.sleep(latency)
            return os.rmdir(path)

        def statfs(self, path):
            st = os.statvfs(path)
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
            return {k: getattr(st, k) for k in (*keys, "f_frsize", "f_namemax")}

        def symlink(self, target, source):
            os.symlink(source, target)
            self._owned(target)

        def truncate(self, path, length, fh=None):
            if fh is not None:
                return os.ftruncate(fh, length)
            with open(path, "r+b") as f:
                f.truncate(length)
            return 0

        def unlink(self, path):
            time.sleep(latency)
            return os.unlink(path)

        def utimens(self, path, times=None):
            if times is None:
                return os.utime(path, follow_symlinks=False)
            return os.utime(path, ns=times, follow_symlinks=False)

        def write(self, path, data, offset, fh):
            self.writes.take(len(data))
            return os.pwrite(fh, data, offset)

    class Drive(Throttled):
        """Google Drive as Colab mounts it (shared/notes/real-parts.md): no symbolic or hard links, fifos or
        sockets (EOPNOTSUPP, what Drive answers a link); every file root's 0600 and every folder root's 0700,
        whatever chmod or chown asks (they succeed and change nothing), so only root may enter and nothing
        may be executed from it; flock and rename work."""

        def access(self, path, mode):
            if fuse_get_context()[0] != 0 or (mode & os.X_OK and not os.path.isdir(path)):
                raise FuseOSError(errno.EACCES)

        def chmod(self, path, mode):
            return 0

        def chown(self, path, uid, gid):
            return 0

        def _owned(self, path: str) -> None:
            return None

        def getattr(self, path, fh=None):
            out = super().getattr(path, fh)
            kind = stat.S_IFDIR if stat.S_ISDIR(out["st_mode"]) else stat.S_IFREG
            out.update(st_mode=kind | (0o700 if kind == stat.S_IFDIR else 0o600), st_uid=0, st_gid=0)
            return out

        def link(self, target, source):
            raise FuseOSError(errno.EOPNOTSUPP)

        def symlink(self, target, source):
            raise FuseOSError(errno.EOPNOTSUPP)

        def mknod(self, path, mode, dev):
            raise FuseOSError(errno.EOPNOTSUPP)

        def readlink(self, path):
            raise FuseOSError(errno.EINVAL)

    return Drive() if drive else Throttled()


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
