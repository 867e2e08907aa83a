"""Rotate the server log when it passes a size: LOG -> LOG.1 -> ... -> LOG.KEEP (the oldest dropped).

    python3 log_rotate.py LOG MAX_BYTES KEEP

The log is copied, then truncated in place ("copytruncate"): the server keeps its file open in
append mode (O_APPEND: `>>`, systemd's append:), so it writes on at the new end, and no signal or
restart is needed. Lines written between the copy and the truncation can be lost. Installed as
TRITON_HOME/bin/triton-log-rotate and run as root every triton_log_check_s seconds beside the
server, so it trusts no name: the log is opened without following a link and must be a regular
file with one name; each copy is created anew (never through an existing name), 0640.
Runs on the host (3.8+).
"""

import os
import stat
import sys


def rotate(log: str, max_bytes: int, keep: int) -> bool:
    """Rotate when log holds at least max_bytes; True when it did."""
    try:
        fd = os.open(log, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False  # absent, or a link: left alone
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size < max_bytes:
            return False
        for n in range(keep - 1, 0, -1):
            if os.path.lexists(f"{log}.{n}"):
                os.replace(f"{log}.{n}", f"{log}.{n + 1}")  # renames a name, whatever it is, in place
        if keep > 0:
            tmp = f"{log}.1.tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
            with os.fdopen(out, "wb") as dst:
                os.lseek(fd, 0, os.SEEK_SET)
                while True:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    dst.write(chunk)
            os.replace(tmp, f"{log}.1")
        os.ftruncate(fd, 0)
        return True
    finally:
        os.close(fd)


if __name__ == "__main__":
    rotate(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
