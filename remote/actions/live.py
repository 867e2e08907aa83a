"""Run a long command and say how far it is while it runs; runs with the host's python3 (3.8+).

    python3 live.py LABEL COMMAND [ARG...]

For pip downloads: the command gets a private TMPDIR, where pip writes what it downloads; every few
seconds a line gives the bytes written there, the rate, and the file being written with its size and
time left (from pip's own "Downloading NAME (SIZE)" lines: several pips may run at once). The
command's output is kept and shown only if it fails, with its exit status (a quiet success: the closing
line says what moved).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from _progress import EVERY, Progress, eta, mib

# pip's "Downloading URL-or-NAME (190.0 MB)" (pip's format_size: decimal units)
DOWNLOADING = re.compile(r"Downloading (\S+)(?: \(([\d.]+) (bytes|kB|MB|GB)\))?")
UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}

# pip's words for a pin it has no file for (with --only-binary :all:, an sdist-only pin says this)
NO_WHEEL = re.compile(r"No matching distribution found for (\S+)")


def tree_bytes(top):
    """Bytes of every file under top, and the newest file's name and size (what is being written)."""
    total, newest, newest_size, newest_time = 0, "", 0, 0.0
    for folder, _, names in os.walk(top):
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:  # gone meanwhile
                continue
            total += st.st_size
            if st.st_mtime >= newest_time:
                newest, newest_size, newest_time = name, st.st_size, st.st_mtime
    return total, newest, newest_size


def file_progress(name, written, announced, rate):
    """NAME DONE of TOTAL, TIME left: pip announces a size rounded to a tenth of its unit ("1.7 MB" is
    1.65 to 1.75 MB), so a file written past it has its own size as its total, never done above it."""
    if not announced:
        return f"{name} {mib(written)}"
    total = max(announced, written)
    left = f", {eta((total - written) / rate)} left" if rate and total > written else ""
    return f"{name} {mib(written)} of {mib(total)}{left}"


def main(label, command, every=EVERY):
    tmp = tempfile.mkdtemp(prefix="triton-live-")
    lines = []
    announced = {}  # every file a pip said it downloads -> its size (pips may run at once: tasks/venv/pip_commands.py)
    env = dict(os.environ, TMPDIR=tmp)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)

    def read():
        for raw in child.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            lines.append(line)
            m = DOWNLOADING.search(line)
            if m:
                name = m[1].rsplit("/", 1)[-1].replace("%2B", "+")
                announced[name] = int(float(m[2]) * UNITS[m[3]]) if m[2] else 0

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    progress = Progress(label, every=every)
    most = 0
    try:
        while child.poll() is None:
            time.sleep(0.25)
            done, newest, newest_size = tree_bytes(tmp)
            most = max(most, done)
            what = ""
            if newest in announced:  # the file being written is one a pip said it is downloading
                rate = progress.rate(most, time.monotonic())
                what = file_progress(newest, newest_size, announced[newest], rate) + "; in all"
            progress.update(most, what)
    finally:
        reader.join(timeout=5)
        shutil.rmtree(tmp, ignore_errors=True)
    if child.returncode:
        print("\n".join(lines), file=sys.stderr)
        for pin in sorted({m.group(1) for m in map(NO_WHEEL.search, lines) if m}):
            print(
                f"{label}: {pin} has no wheel for this host's Python and platform (an sdist is never built: its "
                "build would run as root). Fix: pin a version that publishes a wheel for it.",
                file=sys.stderr,
            )
        print(f"{label}: failed (exit status {child.returncode})", file=sys.stderr)
        return child.returncode
    progress.finished(most)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
