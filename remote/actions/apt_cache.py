"""apt's cache on the persistent path, recorded and checked: root installs from it after a reset.

    python3 apt_cache.py record CACHE STATE          after apt ran: the sha256 of every list and .deb
    python3 apt_cache.py check CACHE STATE SHA256    before apt runs: anything changed since is named and removed

apt checks a .deb against the package lists, and the lists against their signatures, but only when
it downloads them: lists kept on a (possibly shared) drive are trusted as they are. So a list that
changed or that nobody recorded is removed with every other list and the update stamp (the next
`apt-get update` fetches and verifies them again); a changed .deb is removed (apt fetches it again).

The manifest sits on the drive beside what it guards, so it is trusted only where its own sha256 is the
one the controller kept when it was written (SHA256: record leaves it in STATE/manifest.sha256, root's
local disk, for the controller to take): a writer of the drive who alters a .deb and rewrites its line
changes the manifest's digest, and every file counts as unrecorded. STATE (root's) also keeps what the
check found intact, for the record after apt. Runs on the host (3.8+).
"""

import hashlib
import os
import sys

from _common import sha256

MANIFEST = "manifest.sha256"
REPORT = "check.log"  # what the last check removed, for the run's output
# What the last check found intact, each file with its size and mtime (in STATE, root's): the record after
# apt ran hashes again only what apt wrote since (a cache on a slow network drive is read once, not twice).
CHECKED = "checked"
DIGEST = "manifest.sha256"  # in STATE: the manifest's sha256 as record wrote it, for the controller


def entries(cache):
    """The files that count: every list and every .deb (not apt's partial downloads or locks)."""
    out = []
    for sub, keep in (("lists", lambda n: n != "lock"), ("archives", lambda n: n.endswith(".deb"))):
        folder = os.path.join(cache, sub)
        if os.path.isdir(folder):
            out += [
                f"{sub}/{n}" for n in sorted(os.listdir(folder)) if keep(n) and os.path.isfile(os.path.join(folder, n))
            ]
    return out


def _stamp(path):
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}"


def record(cache, state):
    checked = {}
    checked_path = os.path.join(state, CHECKED)
    if os.path.exists(checked_path):
        with open(checked_path) as f:
            for line in f:
                stamp, digest, rel = line.rstrip("\n").split(" ", 2)
                checked[rel] = (stamp, digest)
        os.unlink(checked_path)
    lines = []
    for rel in entries(cache):
        full = os.path.join(cache, rel)
        seen = checked.get(rel)
        digest = seen[1] if seen and seen[0] == _stamp(full) else sha256(full)
        lines.append(f"{digest}  {rel}\n")
    text = "".join(lines).encode()
    path = os.path.join(cache, MANIFEST)
    with open(path + ".part", "wb") as f:
        f.write(text)
    os.replace(path + ".part", path)
    os.makedirs(state, mode=0o700, exist_ok=True)
    with open(os.path.join(state, DIGEST) + ".part", "w") as f:  # of the bytes written, never read back
        f.write(hashlib.sha256(text).hexdigest() + "\n")
    os.replace(os.path.join(state, DIGEST) + ".part", os.path.join(state, DIGEST))
    print(f"apt cache: {len(lines)} files recorded with their sha256", file=sys.stderr)
    return 0


def check(cache, state, want):
    path = os.path.join(cache, MANIFEST)
    recorded = {}
    report = []
    if os.path.exists(path):
        with open(path, "rb") as f:
            text = f.read()  # read once: what is checked is what is parsed
        if want and hashlib.sha256(text).hexdigest() == want:
            for line in text.decode("utf-8", "replace").splitlines():
                digest, _, rel = line.partition("  ")
                recorded[rel] = digest
        else:
            why = "is not the one the controller kept" if want else "has no digest kept on the controller"
            report.append(f"apt cache: its manifest {why} (altered, or written elsewhere): nothing in it is trusted")
    bad, intact = [], []
    for rel in entries(cache):
        full = os.path.join(cache, rel)
        stamp = _stamp(full)
        digest = sha256(full)
        if recorded.get(rel) == digest:
            intact.append(f"{stamp} {digest} {rel}\n")
        else:
            bad.append(rel)
    lists_bad = any(rel.startswith("lists/") for rel in bad)
    for rel in bad:
        why = "is not recorded" if rel not in recorded else "does not match its recorded sha256"
        report.append(f"apt cache: {rel} {why} (damaged or altered); removed it")
        os.unlink(os.path.join(cache, rel))
    if lists_bad:  # lists go together with their signed Release files: fetch and verify all again
        for rel in entries(cache):
            if rel.startswith("lists/"):
                os.unlink(os.path.join(cache, rel))
        stamp = os.path.join(cache, "update-stamp")
        if os.path.exists(stamp):
            os.unlink(stamp)
        report.append("apt cache: the package lists will be fetched and verified again")
    with open(os.path.join(cache, REPORT), "w") as f:
        f.writelines(line + "\n" for line in report)
    os.makedirs(state, mode=0o700, exist_ok=True)
    stale = os.path.join(cache, CHECKED)  # where an older version kept it: on the drive, trusted no more
    if os.path.exists(stale):
        os.unlink(stale)
    if not lists_bad:
        with open(os.path.join(state, CHECKED), "w") as f:
            f.writelines(intact)
    for line in report:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    action, cache, state = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.exit(record(cache, state) if action == "record" else check(cache, state, sys.argv[4]))
