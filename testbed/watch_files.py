"""Run on a test host as an unprivileged user while a provision runs: names every file it can read under
ROOTS that holds TOKEN (or CANARY, a readable file the test plants to prove the watcher sees such files).

    python3 watch_files.py TOKEN CANARY STOP_FILE [ROOT ...]

It reads each file once at the start, then again whenever inotify says one was written to, closed after
writing or moved into place: a file that holds a secret for an instant is read at that instant, and a
quiet tree costs no CPU (a loop that walked the trees over and over took a core and still read each file
only every few seconds). Each new folder is watched before it is listed, so nothing written in it is
missed. Says `WATCHING folders` once the trees are watched; stops once STOP_FILE exists, its last line
`WATCHED folders READS files EVENTS events`.
Python 3.8+, Linux, the standard library only (inotify through ctypes).
"""

import contextlib
import ctypes
import ctypes.util
import os
import select
import struct
import sys

ROOTS = ["/tmp", "/var/tmp", "/home", "/dev/shm", "/persist", "/run/user"]
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100
IN_Q_OVERFLOW, IN_ISDIR = 0x4000, 0x40000000
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the name, NUL-padded to len
READ_LIMIT = 1 << 20  # the first MiB of a file: a token sits in a small file


class Watcher:
    def __init__(self, needles):
        self.needles = needles  # [(label, bytes)]
        self.libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.folders = {}  # watch descriptor -> folder
        self.found, self.reads, self.events = set(), 0, 0
        self.modified = set()  # files read since written to, not yet closed: read once more at their close

    def look(self, path):
        """Read path (never through a link) and name what it holds."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return
        try:
            with os.fdopen(fd, "rb") as file:
                data = file.read(READ_LIMIT)
        except OSError:
            return
        self.reads += 1
        for label, needle in self.needles:
            if needle in data and (label, path) not in self.found:
                self.found.add((label, path))
                print(label, path, flush=True)

    def watch(self, folder):
        """folder and everything under it: watched first, then listed and read."""
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), MASK)
        if wd < 0:
            return  # a folder this user may not read
        self.folders[wd] = folder
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                self.watch(path)
            elif os.path.isfile(path) and not os.path.islink(path):
                self.look(path)

    def handle(self, buffer):
        offset = 0
        while offset + EVENT.size <= len(buffer):
            wd, mask, _, length = EVENT.unpack_from(buffer, offset)
            raw = buffer[offset + EVENT.size : offset + EVENT.size + length].rstrip(b"\0")
            offset += EVENT.size + length
            self.events += 1
            if mask & IN_Q_OVERFLOW:  # events were lost: read everything again
                for folder in list(self.folders.values()):
                    self.watch(folder)
                continue
            folder = self.folders.get(wd)
            if folder is None or not raw:
                continue
            path = os.path.join(folder, os.fsdecode(raw))
            if mask & IN_ISDIR:
                if mask & (IN_CREATE | IN_MOVED_TO):
                    self.watch(path)
            elif mask & IN_MODIFY:
                if path not in self.modified:  # once while it is written (a large file sends many)
                    self.modified.add(path)
                    self.look(path)
            else:
                self.modified.discard(path)
                self.look(path)

    def run(self, roots, stop):
        for root in roots:
            if os.path.isdir(root):
                self.watch(root)
        print("WATCHING", len(self.folders), flush=True)  # from here on, what is written is read
        while not os.path.exists(stop):
            if select.select([self.fd], [], [], 0.2)[0]:
                with contextlib.suppress(BlockingIOError):  # (non-blocking: nothing left to read)
                    self.handle(os.read(self.fd, 1 << 16))
        print("WATCHED", len(self.folders), "READS", self.reads, "EVENTS", self.events, flush=True)


def main(argv):
    token, canary, stop = argv[1].encode(), argv[2].encode(), argv[3]
    Watcher([("TOKEN", token), ("CANARY", canary)]).run(argv[4:] or ROOTS, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
