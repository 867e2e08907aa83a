"""The FUSE file systems of the test bed's slow /persist (testbed/throttle.py): a passthrough that moves at
most a rate each way and waits a latency per open, create and remove, and the same with Google Drive's
semantics. Imported only where the daemon runs (fusepy, over libfuse2)."""

from __future__ import annotations

import errno
import os
import stat
import threading
import time

from fuse import FuseOSError, Operations, fuse_get_context


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


class Throttled(Operations):
    """The passthrough over backing: reads and writes through two buckets of rate bytes a second, latency
    seconds at each open, create and remove."""

    use_ns = True

    def __init__(self, backing: str, rate: float, latency: float) -> None:
        self.root = os.path.realpath(backing)
        self.reads, self.writes = Bucket(rate), Bucket(rate)
        self.latency = latency

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
        time.sleep(self.latency)
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
        time.sleep(self.latency)
        os.mkdir(path, mode)
        self._owned(path)

    def mknod(self, path, mode, dev):
        os.mknod(path, mode, dev)
        self._owned(path)

    def open(self, path, flags):
        time.sleep(self.latency)
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
        time.sleep(self.latency)
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
        time.sleep(self.latency)
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
