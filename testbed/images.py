"""Release bases: a debootstrap tarball per release and flavour (cached), unpacked once into the
read-only lower directory every host's overlay starts from."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path

from testbed.config import (
    _RELEASE_RE,
    BASE_PACKAGES,
    CACHE_DIR,
    DEBIAN_MIRROR,
    INITS,
    NOTEBOOK_PACKAGES,
    PERSIST_PATH,
    SYSTEMD_PACKAGES,
    TestbedError,
    _log,
    _run,
    cache_built,
)


def packages(init: str) -> tuple[str, ...]:
    """What debootstrap includes in a base of this flavour."""
    return BASE_PACKAGES + (SYSTEMD_PACKAGES if init == "systemd" else NOTEBOOK_PACKAGES)


def _flavour(release: str, init: str) -> str:
    """The base's cache name: its release, its init, and its package list (a changed list builds anew)."""
    key = hashlib.sha256(" ".join(packages(init)).encode()).hexdigest()[:8]
    return f"{release}-{key}" if init == "none" else f"{release}-{init}-{key}"


def tarball_path(release: str, init: str = "none") -> Path:
    return CACHE_DIR / f"rootfs-{_flavour(release, init)}.tar"


def base_dir(release: str, init: str = "none") -> Path:
    return CACHE_DIR / f"base-{_flavour(release, init)}"


@cache_built
def ensure_base(release: str, init: str = "none") -> Path:
    """Return the unpacked, prepared root file system of a release, building what is missing."""
    if not _RELEASE_RE.match(release):
        raise TestbedError(f"release {release!r} is not a Debian code name (bookworm, trixie ...)")
    if init not in INITS:
        raise TestbedError(f"init {init!r}: use one of {', '.join(INITS)}")
    base = base_dir(release, init)
    if (base / ".testbed-ready").exists():
        return base
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tarball = tarball_path(release, init)
    if not tarball.exists():
        _build_tarball(release, tarball, packages(init))
    if base.exists():
        shutil.rmtree(base)
    tmp = base.with_name(base.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _log(f"unpacking {tarball} into {base}")
    _run(["tar", "-xf", str(tarball), "--numeric-owner", "-C", str(tmp)])
    _prepare_base(tmp, init)
    (tmp / ".testbed-ready").write_text(release + "\n")
    tmp.rename(base)
    return base


def _build_tarball(release: str, tarball: Path, packages: tuple[str, ...]) -> None:
    if not shutil.which("debootstrap"):
        raise TestbedError("debootstrap is not installed: apt-get install -y debootstrap")
    work = CACHE_DIR / f"debootstrap-{release}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    _log(f"debootstrap {release} from {DEBIAN_MIRROR} (once; about a minute)")
    t0 = time.monotonic()
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            "--include=" + ",".join(packages),
            release,
            str(work),
            DEBIAN_MIRROR,
        ],
        stdout=subprocess.DEVNULL,
    )
    partial = tarball.with_suffix(".tar.tmp")
    _run(["tar", "-cf", str(partial), "--numeric-owner", "-C", str(work), "."])
    partial.rename(tarball)
    shutil.rmtree(work)
    _log(f"cached {tarball} in {time.monotonic() - t0:.0f}s")


def _prepare_base(root: Path, init: str) -> None:
    """Trust this machine's CA bundle and resolver inside, as a cloud image would its own."""
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.exists():
        dest = root / "usr/local/share/ca-certificates/testbed-controller.crt"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ca, dest)
        _run(["chroot", str(root), "update-ca-certificates"], stdout=subprocess.DEVNULL)
    resolv = root / "etc/resolv.conf"
    resolv.unlink(missing_ok=True)
    shutil.copyfile("/etc/resolv.conf", resolv)
    # sshd as PID 1 of the host's namespace: no login records, no privilege-separation dir.
    (root / "run/sshd").mkdir(parents=True, exist_ok=True)
    (root / PERSIST_PATH.lstrip("/")).mkdir(exist_ok=True)
    if init == "none":
        # dpkg must not try to start services (there is no init system to start them).
        policy = root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
