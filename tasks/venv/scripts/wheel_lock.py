"""Write WHEELHOUSE/requirements.lock: every file of the wheelhouse as `name==version --hash=sha256:...`.

    python3 wheel_lock.py WHEELHOUSE            record
    python3 wheel_lock.py --check WHEELHOUSE    verify before installing

--check: each file the lock names must be there with its sha256; one that is not (damaged or altered
on the persistent path) is named and removed with the wheelhouse's .complete marker, and the exit
status is 1: the next run fetches it again.

What pip downloaded for the pins is the whole venv, transitive dependencies included; installing
with `--require-hashes -r requirements.lock` installs exactly these files, and a file changed since
is refused by name. Wheels only: a source archive in the wheelhouse (its build would run its author's
code as root) is named and removed, no lock is written, and the exit status is 2. Runs on the host
(3.8+); written aside, then renamed.
"""

import os
import re
import sys

from _common import sha256

# name-version(-build)?-py-abi-platform.whl, or name-version.tar.gz (an sdist); names normalised.
WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")
SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[0-9][^-]*)\.(tar\.gz|zip)$")


def entry(filename):
    m = WHEEL.match(filename) or SDIST.match(filename)
    if not m:
        return None
    return re.sub(r"[-_.]+", "-", m["name"]).lower(), m["version"]


def main(wheelhouse: str) -> int:
    lines = []
    sdists = [f for f in sorted(os.listdir(wheelhouse)) if SDIST.match(f) and not WHEEL.match(f)]
    for filename in sdists:
        os.unlink(os.path.join(wheelhouse, filename))
        print(
            f"wheel_lock: {filename} is a source archive, not a wheel: its build would run its author's code as "
            f"root, so it is not installed (removed it; no lock written). Fix: pin a version of "
            f"{entry(filename)[0]} that publishes a wheel for this host's Python and platform.",
            file=sys.stderr,
        )
    if sdists:
        return 2
    for filename in sorted(os.listdir(wheelhouse)):
        found = entry(filename) if WHEEL.match(filename) else None
        if found:
            name, version = found
            digest = sha256(os.path.join(wheelhouse, filename))
            lines.append(f"{name}=={version} --hash=sha256:{digest}  # {filename}\n")
    lock = os.path.join(wheelhouse, "requirements.lock")
    with open(lock + ".part", "w") as f:
        f.writelines(lines)
    os.replace(lock + ".part", lock)
    print(f"wheel_lock: {len(lines)} files of {wheelhouse} recorded with their sha256", file=sys.stderr)
    return 0


def check(wheelhouse: str) -> int:
    bad = []
    with open(os.path.join(wheelhouse, "requirements.lock")) as f:
        for line in f:
            m = re.search(r"--hash=sha256:([0-9a-f]{64})\s+#\s+(\S+)\s*$", line)
            if not m:
                continue
            want, filename = m.groups()
            path = os.path.join(wheelhouse, filename)
            if os.sep in filename or not os.path.isfile(path) or sha256(path) != want:
                bad.append(filename)
    for filename in bad:
        path = os.path.join(wheelhouse, os.path.basename(filename))
        if os.path.isfile(path):
            os.unlink(path)
        print(
            f"wheelhouse: {filename} is missing or does not match its recorded sha256 (damaged or altered);"
            " removed it. Run again to fetch it.",
            file=sys.stderr,
        )
    if bad:
        marker = os.path.join(wheelhouse, ".complete")
        if os.path.exists(marker):
            os.unlink(marker)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    sys.exit(main(sys.argv[1]))
