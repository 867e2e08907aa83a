"""Rotate the server log when it passes a size: LOG -> LOG.1 -> ... -> LOG.KEEP (the oldest dropped).

    python3 log_rotate.py LOG MAX_BYTES KEEP

The log is copied, then truncated in place ("copytruncate"): the server keeps its file open in
append mode (O_APPEND: `>>`, systemd's append:), so it writes on at the new end, and no signal or
restart is needed. Lines written between the copy and the truncation can be lost. Installed as
TRITON_HOME/bin/triton-log-rotate and run every triton_log_check_s seconds beside the server.
Runs on the host (3.8+).
"""

import os
import shutil
import sys


def rotate(log: str, max_bytes: int, keep: int) -> bool:
    """Rotate when log holds at least max_bytes; True when it did."""
    try:
        if os.path.getsize(log) < max_bytes:
            return False
    except OSError:
        return False
    for n in range(keep - 1, 0, -1):
        if os.path.exists(f"{log}.{n}"):
            os.replace(f"{log}.{n}", f"{log}.{n + 1}")
    if keep > 0:
        shutil.copyfile(log, f"{log}.1.tmp")
        os.replace(f"{log}.1.tmp", f"{log}.1")
    with open(log, "r+b") as f:
        f.truncate(0)
    return True


if __name__ == "__main__":
    rotate(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
