"""Write WHEELHOUSE/requirements.lock: every file of the wheelhouse as `name==version --hash=sha256:...`.

    python3 wheel_lock.py WHEELHOUSE

What pip downloaded for the pins is the whole venv, transitive dependencies included; installing
with `--require-hashes -r requirements.lock` installs exactly these files, and a file changed since
is refused by name. Runs on the host (3.8+); written aside, then renamed.
"""

import hashlib
import os
import re
import sys

# name-version(-build)?-py-abi-platform.whl, or name-version.tar.gz (an sdist); names normalised.
WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")
SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[0-9][^-]*)\.(tar\.gz|zip)$")


def entry(filename):
    m = WHEEL.match(filename) or SDIST.match(filename)
    if not m:
        return None
    return re.sub(r"[-_.]+", "-", m["name"]).lower(), m["version"]


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main(wheelhouse: str) -> int:
    lines = []
    for filename in sorted(os.listdir(wheelhouse)):
        found = entry(filename)
        if found:
            name, version = found
            lines.append(f"{name}=={version} --hash=sha256:{sha256(os.path.join(wheelhouse, filename))}\n")
    lock = os.path.join(wheelhouse, "requirements.lock")
    with open(lock + ".part", "w") as f:
        f.writelines(lines)
    os.replace(lock + ".part", lock)
    print(f"wheel_lock: {len(lines)} files of {wheelhouse} recorded with their sha256", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
