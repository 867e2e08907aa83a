"""apt's cache on the persistent path, recorded and checked: root installs from it after a reset.

    python3 apt_cache.py check CACHE STATE SHA256    before apt runs: anything changed since is named and removed
    python3 apt_cache.py dpkg CACHE STATE SHA256 PKG...
                                                     after a reset: the recorded .debs installed with dpkg alone,
                                                     no package lists read; exit 3 where apt must install
    python3 apt_cache.py record CACHE STATE PKG...   after apt ran: the sha256 of every list and .deb, and
                                                     which .debs installed PKG... on which set of packages

apt checks a .deb against the package lists, and the lists against their signatures, but only when
it downloads them: lists kept on a (possibly shared) drive are trusted as they are. So a list that
changed or that nobody recorded is removed with every other list and the update stamp (the next
`apt-get update` fetches and verifies them again); a changed .deb is removed (apt fetches it again).

The manifest sits on the drive beside what it guards, so it is trusted only where its own sha256 is the
one the controller kept when it was written (SHA256: record leaves it in STATE/manifest.sha256, root's
local disk, for the controller to take): a writer of the drive who alters a .deb and rewrites its line
changes the manifest's digest, and every file counts as unrecorded. STATE (root's) also keeps what the
check found intact, for the record after apt. Runs on the host (3.8+).

A reset host is the same image every time, so apt would install the same .debs again, after reading every
package list (seconds of CPU, and tens of MB from a slow drive). So the record also names the .debs the
install added and the host's package set before it (INSTALLED_DEBS, guarded by the manifest like the rest);
where the host's package set is that one again, `dpkg` installs exactly those .debs, each copied to root's
local disk and checked against the trusted manifest first. Anywhere else (another image, a package asked that
the record lacks, no trusted record) it exits 3 and apt installs as before.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from _common import sha256

MANIFEST = "manifest.sha256"
REPORT = "check.log"  # what the last check removed, for the run's output
# What the last check found intact, each file with its size and mtime (in STATE, root's): the record after
# apt ran hashes again only what apt wrote since (a cache on a slow network drive is read once, not twice).
CHECKED = "checked"
DIGEST = "manifest.sha256"  # in STATE: the manifest's sha256 as record wrote it, for the controller
# On the drive, guarded by the manifest: {"image": the package set's digest before the install, "packages":
# what was asked, "debs": the archives/ files that the install added or upgraded}.
INSTALLED_DEBS = "installed-debs.json"
BEFORE = "dpkg-before"  # in STATE: the host's package set as the check saw it (before apt or dpkg ran)
INSTALL_LOG = "install.log"  # in STATE: what the dpkg path did, for the run's output
DPKG_STATUS = "/var/lib/dpkg/status"
DPKG = "dpkg"
NOT_HERE = 3  # dpkg's exit status where apt must install instead
_DEB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+~%_-]*\.deb$")


def entries(cache):
    """The files that count: every list and every .deb (not apt's partial downloads or locks), and the
    record of which .debs installed what."""
    out = [INSTALLED_DEBS] if os.path.isfile(os.path.join(cache, INSTALLED_DEBS)) else []
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


def package_set():
    """The host's dpkg database as sorted lines "package:arch version status": any package added, removed,
    upgraded or left half-installed changes it."""
    lines = []
    if os.path.exists(DPKG_STATUS):
        with open(DPKG_STATUS, encoding="utf-8", errors="replace") as f:
            for paragraph in f.read().split("\n\n"):
                fields = dict(
                    line.split(": ", 1) for line in paragraph.splitlines() if ": " in line and not line[0].isspace()
                )
                if "Package" in fields:
                    arch = fields.get("Architecture", "")
                    lines.append(f"{fields['Package']}:{arch} {fields.get('Version', '')} {fields.get('Status', '')}")
    return sorted(lines)


def _digest(lines):
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _installed(lines):
    """{(package, arch): version} of what is installed, from package_set's lines."""
    out = {}
    for line in lines:
        name, version, status = line.split(" ", 2)
        if status == "install ok installed":
            out[tuple(name.rsplit(":", 1))] = version
    return out


def deb_name(package, arch, version):
    """The file apt keeps a package in: package_version_arch.deb, an epoch's colon written %3a."""
    return f"{package}_{version.replace(':', '%3a')}_{arch}.deb"


def _installed_debs(cache, state, packages):
    """The record of this install (INSTALLED_DEBS' content), or None where dpkg alone could not repeat it:
    no package set saved before it, a package removed, or a .deb it added not in the cache."""
    before_path = os.path.join(state, BEFORE)
    if not packages or not os.path.exists(before_path):
        return None
    with open(before_path) as f:
        before = [line for line in f.read().splitlines() if line]
    was, now = _installed(before), _installed(package_set())
    if any(key not in now for key in was):
        return None
    debs = [deb_name(p, a, v) for (p, a), v in sorted(now.items()) if was.get((p, a)) != v]
    if not debs or not all(os.path.isfile(os.path.join(cache, "archives", d)) for d in debs):
        return None
    return json.dumps({"image": _digest(before), "packages": sorted(packages), "debs": debs}, indent=1) + "\n"


def record(cache, state, packages=()):
    content = _installed_debs(cache, state, list(packages))
    installed_debs = os.path.join(cache, INSTALLED_DEBS)
    if content is None:
        if os.path.exists(installed_debs):
            os.unlink(installed_debs)
    else:
        with open(installed_debs + ".part", "w") as f:
            f.write(content)
        os.replace(installed_debs + ".part", installed_debs)
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


def _trusted(cache, want):
    """{file: sha256} of the manifest, where its digest is the controller's; else None."""
    path = os.path.join(cache, MANIFEST)
    if not want or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        text = f.read()  # read once: what is checked is what is parsed
    if hashlib.sha256(text).hexdigest() != want:
        return None
    return {
        rel: digest
        for digest, _, rel in (line.partition("  ") for line in text.decode("utf-8", "replace").splitlines())
    }


def check(cache, state, want):
    report = []
    recorded = _trusted(cache, want)
    if recorded is None:
        recorded = {}
        if os.path.exists(os.path.join(cache, MANIFEST)):
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
    with open(os.path.join(state, BEFORE), "w") as f:
        f.writelines(line + "\n" for line in package_set())
    for line in report:
        print(line, file=sys.stderr)
    return 0


def _copy_checked(src, dest, digest):
    """Copy src to dest while hashing the bytes copied; True where they are the digest's."""
    h = hashlib.sha256()
    with open(src, "rb") as f, open(dest, "wb") as out:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    return h.hexdigest() == digest


def _parsed(raw):
    """INSTALLED_DEBS' content as written by record, or None."""
    try:
        entry = json.loads(raw)
        ok = isinstance(entry["image"], str) and all(
            isinstance(entry[k], list) and all(isinstance(x, str) for x in entry[k]) for k in ("packages", "debs")
        )
    except (ValueError, KeyError, TypeError):
        return None
    return entry if ok else None


def dpkg(cache, state, want, packages):
    """Install packages from the recorded .debs with dpkg alone, where this host's package set is the one
    they were recorded on; NOT_HERE (and why, on stderr) where apt must install them."""
    log = os.path.join(state, INSTALL_LOG)
    if os.path.exists(log):
        os.unlink(log)
    recorded = _trusted(cache, want)
    why = None
    if recorded is None or INSTALLED_DEBS not in recorded:
        why = "no trusted record of the .debs an install on this image took"
    else:
        with open(os.path.join(cache, INSTALLED_DEBS), "rb") as f:
            raw = f.read()  # read once: what is checked is what is parsed
        entry = _parsed(raw) if hashlib.sha256(raw).hexdigest() == recorded[INSTALLED_DEBS] else None
        if entry is None:
            why = f"{INSTALLED_DEBS} does not match its recorded sha256, or is not a record"
        elif entry["image"] != _digest(package_set()):
            why = "this host's packages are not those the .debs were recorded on"
        elif not set(packages) <= set(entry["packages"]):
            why = "the record does not cover " + ", ".join(sorted(set(packages) - set(entry["packages"])))
        elif not all(_DEB_NAME.match(d) and f"archives/{d}" in recorded for d in entry["debs"]):
            why = "a recorded .deb is not in the cache's manifest"
        else:
            gone = [d for d in entry["debs"] if not os.path.isfile(os.path.join(cache, "archives", d))]
            why = f"archives/{gone[0]} is not in the cache" if gone else None
    if why:
        print(f"apt cache: apt-get installs ({why})", file=sys.stderr)
        return NOT_HERE
    os.makedirs(state, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix="debs.", dir=state)  # root's local disk: what dpkg reads is what was checked
    try:
        copies = []
        for name in entry["debs"]:
            copies.append(os.path.join(work, name))
            if not _copy_checked(os.path.join(cache, "archives", name), copies[-1], recorded[f"archives/{name}"]):
                print(f"apt cache: archives/{name} changed since the check; not installed", file=sys.stderr)
                return 1
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        rc = subprocess.run([DPKG, "-i", *copies], env=env, stdout=2).returncode  # its output with ours
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if rc == 0:
        line = f"apt cache: {len(copies)} recorded .deb(s) installed with dpkg, no package list read: "
        line += " ".join(entry["debs"])
        with open(log, "w") as f:
            f.write(line + "\n")
        print(line, file=sys.stderr)
    return rc


if __name__ == "__main__":
    action, cache, state = sys.argv[1], sys.argv[2], sys.argv[3]
    if action == "record":
        sys.exit(record(cache, state, sys.argv[4:]))
    if action == "dpkg":
        sys.exit(dpkg(cache, state, sys.argv[4], sys.argv[5:]))
    sys.exit(check(cache, state, sys.argv[4]))
