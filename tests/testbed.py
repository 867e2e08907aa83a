"""Disposable Debian test hosts on this machine, reached over real SSH; no Docker.

Each host is an overlay root file system over a cached, unpacked debootstrap tarball,
run in private PID and mount namespaces with sshd on a loopback port: sshd is PID 1 (a
notebook), or with `--init systemd` systemd is (a VM: its own UTS, IPC and cgroup
namespaces, a writable cgroup subtree, `container=testbed`; sshd is a unit). `--user`
logs in as a user with passwordless sudo instead of root. `reset` wipes the overlay (a
notebook reset) and keeps `/persist`; `restart` stops a host and boots it again with its
root file system kept (a reboot); `down` kills each host's namespace by the process id it
recorded, unmounts and deletes. Usage:

    python -m tests.testbed up --hosts 2 [--release bookworm] [--init systemd] [--user ops]
    python -m tests.testbed reset tb1
    python -m tests.testbed restart tb1
    python -m tests.testbed remove tb1
    python -m tests.testbed status
    python -m tests.testbed down
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

# Where hosts live while they run, and where release tarballs are cached between runs.
STATE_DIR = Path(os.environ.get("TRITON_TESTBED_DIR", "/var/tmp/triton-testbed"))
CACHE_DIR = Path(os.environ.get("TRITON_TESTBED_CACHE", "/var/cache/triton-testbed"))
DEBIAN_MIRROR = os.environ.get("TRITON_TESTBED_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# What a fresh host has: what a minimal cloud image or a notebook's Python has, no more.
BASE_PACKAGES = ("python3", "python3-venv", "openssh-server", "ca-certificates")
# What a VM image adds: systemd as init, D-Bus for logind, sudo for its admin user.
SYSTEMD_PACKAGES = ("systemd", "systemd-sysv", "dbus", "sudo")
INITS = ("none", "systemd")
CGROUP = Path("/sys/fs/cgroup")
FIRST_SSH_PORT = 2201
PERSIST_PATH = "/persist"
_RELEASE_RE = re.compile(r"^[a-z]+$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class TestbedError(RuntimeError):
    """A testbed step failed; the message says which and what to do."""


@dataclass
class Host:
    """One test host: its name, release, SSH port and the process that holds it."""

    name: str
    release: str
    ssh_port: int
    pid: int = 0
    init: str = "none"  # "none": sshd is PID 1; "systemd": systemd is, sshd one of its units
    user: str = "root"  # the SSH user; another one has passwordless sudo

    @property
    def dir(self) -> Path:
        return STATE_DIR / "hosts" / self.name

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def persist(self) -> Path:
        """The persistent directory on this machine, mounted at /persist in the host."""
        return self.dir / "persist"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def _log(msg: str) -> None:
    print(f"[testbed] {msg}", file=sys.stderr, flush=True)


# --- release base: debootstrap tarball (cached) unpacked once into a read-only lower dir


def _flavour(release: str, init: str) -> str:
    return release if init == "none" else f"{release}-{init}"


def tarball_path(release: str, init: str = "none") -> Path:
    return CACHE_DIR / f"rootfs-{_flavour(release, init)}.tar"


def base_dir(release: str, init: str = "none") -> Path:
    return CACHE_DIR / f"base-{_flavour(release, init)}"


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
        _build_tarball(release, tarball, BASE_PACKAGES + (SYSTEMD_PACKAGES if init == "systemd" else ()))
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


# --- state: one JSON file, guarded by a lock, so concurrent commands do not race


@contextlib.contextmanager
def _locked() -> Iterator[dict]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = STATE_DIR / "state.json"
        state = json.loads(path.read_text()) if path.exists() else {"hosts": {}}
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.rename(path)


def load_hosts() -> list[Host]:
    path = STATE_DIR / "state.json"
    if not path.exists():
        return []
    return [Host(**h) for h in json.loads(path.read_text())["hosts"].values()]


def client_key() -> Path:
    """The key the tests log in with; made once per testbed."""
    key = STATE_DIR / "id_ed25519"
    if not key.exists():
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "testbed", "-f", str(key)])
    return key


def known_hosts() -> Path:
    return STATE_DIR / "known_hosts"


def inventory_path() -> Path:
    return STATE_DIR / "inventory.py"


# --- one host's life: mount, start, stop, unmount


def _process_alive(pid: int, marker: str) -> bool:
    """True when pid runs and is still the process we recorded (its command line names marker)."""
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return False
    if stat.rsplit(")", 1)[1].split()[0] == "Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return marker in cmdline


def _mount_root(host: Host, base: Path) -> None:
    for sub in ("upper", "work", "root", "persist", "ssh"):
        (host.dir / sub).mkdir(parents=True, exist_ok=True)
    if not os.path.ismount(host.root):
        opts = f"lowerdir={base},upperdir={host.dir / 'upper'},workdir={host.dir / 'work'}"
        _run(["mount", "-t", "overlay", "overlay", "-o", opts, str(host.root)])


def _install_identity(host: Host) -> None:
    """Put the host's own SSH host keys and the testbed's client key into its root fs."""
    keydir = host.dir / "ssh"
    if not (keydir / "ssh_host_ed25519_key").exists():
        for kind in ("ed25519",):
            _run(
                ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", host.name, "-f", str(keydir / f"ssh_host_{kind}_key")]
            )
    etc_ssh = host.root / "etc/ssh"
    for old in etc_ssh.glob("ssh_host_*"):
        old.unlink()
    for f in keydir.iterdir():
        shutil.copy2(f, etc_ssh / f.name)
    ssh_dir = host.root / "root/.ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth = ssh_dir / "authorized_keys"
    auth.write_text(Path(str(client_key()) + ".pub").read_text())
    auth.chmod(0o600)


# PID 1 of a notebook-like host: sshd, in new PID and mount namespaces.
_SSHD_INIT = (
    'set -e; r="$1"; p="$2"; port="$3"\n'
    'mount -t proc proc "$r/proc"\n'
    'mount --bind /dev "$r/dev"\n'
    'mount --bind /dev/pts "$r/dev/pts"\n'
    'mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"\n'
    'mount -t tmpfs -o mode=755 tmpfs "$r/run"\n'
    'mkdir -p "$r/run/sshd"\n'
    'mount --bind "$p" "$r/persist"\n'
    'exec chroot "$r" /usr/sbin/sshd -D -e -p "$port" -o ListenAddress=127.0.0.1'
)
# PID 1 of a VM-like host: systemd. What it needs here (found by trying, 2026-12-01): its own
# cgroup subtree, writable, as the root of a cgroup namespace ($4, $5: name=systemd and unified);
# /sys read-only; a /dev of its own; a root that is a mount point and pivot_root into it (in a
# chroot the sandboxing of units such as systemd-logind fails with 226/NAMESPACE); container=.
_SYSTEMD_INIT = (
    'set -e; r="$1"; p="$2"; name="$3"; cg_v1="$4"; cg_v2="$5"\n'
    'mount --bind "$r" "$r"\n'
    'mount -t proc proc "$r/proc"\n'
    'mount -t sysfs -o ro sysfs "$r/sys"\n'
    'mount -t tmpfs -o mode=755 tmpfs "$r/sys/fs/cgroup"\n'
    'if [ -n "$cg_v1" ]; then mkdir "$r/sys/fs/cgroup/systemd" "$r/sys/fs/cgroup/unified"\n'
    '  mount --bind "$cg_v1" "$r/sys/fs/cgroup/systemd"; mount --bind "$cg_v2" "$r/sys/fs/cgroup/unified"\n'
    'else umount "$r/sys/fs/cgroup"; mount --bind "$cg_v2" "$r/sys/fs/cgroup"; fi\n'
    'mount -t tmpfs -o mode=755 tmpfs "$r/dev"\n'
    'for d in null zero full random urandom tty; do touch "$r/dev/$d"; mount --bind "/dev/$d" "$r/dev/$d"; done\n'
    'mkdir "$r/dev/pts" "$r/dev/shm"\n'
    'mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$r/dev/pts"\n'
    'ln -s pts/ptmx "$r/dev/ptmx"; ln -s /proc/self/fd "$r/dev/fd"\n'
    'mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"\n'
    'mount --bind "$p" "$r/persist"\n'
    'hostname "$name"\n'
    'cd "$r"; mkdir -p .oldroot; pivot_root . .oldroot; cd /; umount -l /.oldroot; rmdir /.oldroot\n'
    "export container=testbed\n"
    "exec /lib/systemd/systemd\n"
)


def _cgroups(host: Host) -> tuple[Path, Path | None]:
    """The host's own cgroup directories: (unified or cgroup2 root, name=systemd v1 or None)."""
    # One name per host of one state dir: testbeds in other state dirs may have hosts of this name.
    name = f"{hashlib.sha256(str(host.dir).encode()).hexdigest()[:8]}-{host.name}"
    if (CGROUP / "systemd").is_dir() and (CGROUP / "unified").is_dir():  # hybrid (this machine kind)
        return CGROUP / "unified" / "testbed" / name, CGROUP / "systemd" / "testbed" / name
    if (CGROUP / "cgroup.controllers").exists():  # pure cgroup v2
        return CGROUP / "testbed" / name, None
    raise TestbedError("systemd hosts need a cgroup v2 tree or the hybrid layout (name=systemd + unified)")


def _remove_cgroups(host: Host) -> None:
    """Remove the host's cgroup directories, deepest first, once no process is left in them."""
    if host.init != "systemd":
        return
    for top in _cgroups(host):
        if top is None or not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def _start(host: Host) -> None:
    """Boot the host: its PID 1 (sshd or systemd) in namespaces that hold every process of the host."""
    root = str(host.root)
    if host.init == "systemd":
        v2, v1 = _cgroups(host)
        for d in (v2, v1):
            if d is not None:
                d.mkdir(parents=True, exist_ok=True)
        # The boot script moves itself into the host's cgroups, then makes the namespaces.
        enter = 'for c in "$@"; do [ -n "$c" ] && echo $$ > "$c/cgroup.procs"; done; shift $#; '
        argv = [
            "sh",
            "-c",
            enter + 'exec "$0" --pid --fork --mount --uts --ipc --cgroup --propagation private --kill-child'
            ' -- sh -c "$TESTBED_INIT" testbed-host "$TESTBED_ROOT" "$TESTBED_PERSIST" "$TESTBED_NAME"'
            ' "$TESTBED_CG1" "$TESTBED_CG2"',
            "unshare",
            str(v2),
            str(v1) if v1 else "",
        ]
        env = {
            **os.environ,
            "TESTBED_INIT": _SYSTEMD_INIT,
            "TESTBED_ROOT": root,
            "TESTBED_PERSIST": str(host.persist),
            "TESTBED_NAME": host.name,
            "TESTBED_CG1": str(v1) if v1 else "",
            "TESTBED_CG2": str(v2),
        }
    else:
        argv = [
            "unshare",
            "--pid",
            "--fork",
            "--mount",
            "--propagation",
            "private",
            "--kill-child",
            "--",
            "sh",
            "-c",
            _SSHD_INIT,
            "testbed-host",
            root,
            str(host.persist),
            str(host.ssh_port),
        ]
        env = None
    _spawn(host, argv, env)


def _spawn(host: Host, argv: list[str], env: dict | None) -> None:
    """Start the host's init and wait until its sshd answers."""
    # The previous sshd of this host (just killed) may hold its port for a moment longer.
    deadline = time.monotonic() + 15
    while not _port_free(host.ssh_port) and time.monotonic() < deadline:
        time.sleep(0.1)
    log = open(host.dir / "sshd.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env)
    log.close()
    host.pid = proc.pid
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (host.dir / "sshd.log").read_text(errors="replace").splitlines()[-5:]
            raise TestbedError(f"sshd of {host.name} exited ({proc.returncode}): " + " | ".join(tail))
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", host.ssh_port), timeout=1) as s:
            if s.recv(4).startswith(b"SSH-"):
                return
        time.sleep(0.05)
    raise TestbedError(f"sshd of {host.name} did not answer on port {host.ssh_port}")


def _stop(host: Host, graceful: bool = False) -> None:
    """Stop the host through the process we recorded, never by name: a clean shutdown first where
    asked and systemd runs it (SIGRTMIN+4 to its PID 1: poweroff), else kill its namespace."""
    marker = str(host.root)
    if graceful and host.init == "systemd" and _process_alive(host.pid, marker):
        with contextlib.suppress(OSError, ValueError):
            pid1 = int(Path(f"/proc/{host.pid}/task/{host.pid}/children").read_text().split()[0])
            os.kill(pid1, signal.SIGRTMIN + 4)
            deadline = time.monotonic() + 60
            while _process_alive(host.pid, marker) and time.monotonic() < deadline:
                time.sleep(0.05)
    if _process_alive(host.pid, marker):
        os.kill(host.pid, signal.SIGKILL)  # --kill-child takes PID 1 of the namespace with it
        deadline = time.monotonic() + 10
        while _process_alive(host.pid, marker) and time.monotonic() < deadline:
            time.sleep(0.02)
    host.pid = 0
    # The namespace's mounts die with its last process; wait until none holds the overlay.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not _busy(host.root) and not _cgroup_procs(host):
            break
        time.sleep(0.05)
    _remove_cgroups(host)


def _cgroup_procs(host: Host) -> bool:
    """True while a process of a systemd host is left in its cgroup tree."""
    if host.init != "systemd":
        return False
    top = _cgroups(host)[0]
    return top.is_dir() and any(f.read_text().strip() for f in top.rglob("cgroup.procs"))


def _busy(path: Path) -> bool:
    """True while any process has its root or cwd inside path (a host still shutting down)."""
    prefix = str(path)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        for link in ("root", "cwd"):
            with contextlib.suppress(OSError):
                if os.readlink(proc / link).startswith(prefix):
                    return True
    return False


def _unmount_under(top: Path) -> None:
    """Unmount every mount at or below top, deepest first (also those left by a crash)."""
    prefix = str(top)
    mounts = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            mounts.append(point)
    for point in sorted(mounts, key=len, reverse=True):
        res = subprocess.run(["umount", point], capture_output=True, text=True)
        if res.returncode != 0:
            subprocess.run(["umount", "-l", point], check=False)


def _boot(host: Host) -> None:
    base = ensure_base(host.release, host.init)
    _mount_root(host, base)
    _install_identity(host)
    if host.init == "systemd":
        _configure_vm(host)
    if host.user != "root":
        _add_sudo_user(host)
    _start(host)


def _configure_vm(host: Host) -> None:
    """What a VM's first boot sets: its name, its own machine id, sshd on its loopback port."""
    root = host.root
    (root / "etc/hostname").write_text(host.name + "\n")
    (root / "etc/hosts").write_text(f"127.0.0.1\tlocalhost\n127.0.1.1\t{host.name}\n")
    (root / "etc/machine-id").write_text(os.urandom(16).hex() + "\n")
    conf = root / "etc/ssh/sshd_config.d/testbed.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(f"Port {host.ssh_port}\nListenAddress 127.0.0.1\n")


def _add_sudo_user(host: Host) -> None:
    """A login user with passwordless sudo and the testbed's key, as a cloud image's admin user."""
    if not _NAME_RE.match(host.user):
        raise TestbedError(f"user name {host.user!r}: use lower-case letters and digits")
    if not (host.root / "usr/bin/sudo").exists():
        raise TestbedError("--user needs sudo on the host: start it with --init systemd (a VM image has both)")
    root = str(host.root)
    if subprocess.run(["chroot", root, "id", host.user], capture_output=True).returncode != 0:
        _run(["chroot", root, "useradd", "--create-home", "--shell", "/bin/bash", host.user])
    sudoers = host.root / "etc/sudoers.d" / f"testbed-{host.user}"
    sudoers.write_text(f"{host.user} ALL=(ALL) NOPASSWD:ALL\n")
    sudoers.chmod(0o440)
    home = host.root / "home" / host.user
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text(Path(str(client_key()) + ".pub").read_text())
    (ssh_dir / "authorized_keys").chmod(0o600)
    _run(["chroot", root, "chown", "-R", f"{host.user}:{host.user}", f"/home/{host.user}/.ssh"])


# --- commands


def up(
    count: int = 1, release: str = "bookworm", prefix: str = "tb", init: str = "none", user: str = "root"
) -> list[Host]:
    """Start count fresh hosts (more if some already run) and write their inventory."""
    if not _NAME_RE.match(prefix):
        raise TestbedError(f"host name prefix {prefix!r}: use lower-case letters and digits")
    if user != "root" and init != "systemd":
        raise TestbedError("--user needs --init systemd: a VM image has sudo, a notebook image has not")
    ensure_base(release, init)
    client_key()
    t0 = time.monotonic()
    with _locked() as state:
        hosts = {n: Host(**h) for n, h in state["hosts"].items()}
        used = {h.ssh_port for h in hosts.values()}
        made = []
        i = 1
        while len(made) < count:
            name = f"{prefix}{i}"
            i += 1
            if name in hosts:
                continue
            port = FIRST_SSH_PORT
            while port in used or not _port_free(port):
                port += 1
            used.add(port)
            host = Host(name=name, release=release, ssh_port=port, init=init, user=user)
            _boot(host)
            hosts[name] = host
            made.append(host)
            state["hosts"][name] = asdict(host)
        _write_access(list(hosts.values()))
    _log(f"{len(made)} host(s) up in {time.monotonic() - t0:.2f}s; inventory {inventory_path()}")
    return made


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as sshd binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def reset(name: str) -> Host:
    """Restore a host's root file system to fresh; keep its /persist exactly as it was."""
    with _locked() as state:
        if name not in state["hosts"]:
            raise TestbedError(f"no test host {name!r}; `python -m tests.testbed status` lists them")
        host = Host(**state["hosts"][name])
        t0 = time.monotonic()
        _stop(host)
        _unmount_under(host.root)
        for sub in ("upper", "work"):
            shutil.rmtree(host.dir / sub, ignore_errors=True)
        _boot(host)
        state["hosts"][name] = asdict(host)
    _log(f"reset {name} in {time.monotonic() - t0:.2f}s")
    return host


def restart(name: str) -> Host:
    """Stop a host (a clean shutdown where systemd runs it) and boot it again, its disk kept: a reboot."""
    with _locked() as state:
        if name not in state["hosts"]:
            raise TestbedError(f"no test host {name!r}; `python -m tests.testbed status` lists them")
        host = Host(**state["hosts"][name])
        t0 = time.monotonic()
        _stop(host, graceful=True)
        _start(host)
        state["hosts"][name] = asdict(host)
    _log(f"restarted {name} in {time.monotonic() - t0:.2f}s")
    return host


def remove(name: str) -> None:
    """Stop and delete one host, leaving the others running (a module's own host)."""
    with _locked() as state:
        if name not in state["hosts"]:
            return
        host = Host(**state["hosts"].pop(name))
        _stop(host)
        _unmount_under(host.dir)
        if _mounted_under(host.dir):
            raise TestbedError(f"mounts remain under {host.dir}; see /proc/self/mounts")
        shutil.rmtree(host.dir, ignore_errors=True)
        _write_access([Host(**h) for h in state["hosts"].values()])
    _log(f"removed {name}")


def down() -> int:
    """Stop and delete every host. Safe to run twice and after a crash."""
    with _locked() as state:
        hosts = [Host(**h) for h in state["hosts"].values()]
        for host in hosts:
            _stop(host)
        _unmount_under(STATE_DIR / "hosts")
        if _mounted_under(STATE_DIR / "hosts"):
            raise TestbedError(f"mounts remain under {STATE_DIR / 'hosts'}; see /proc/self/mounts")
        shutil.rmtree(STATE_DIR / "hosts", ignore_errors=True)
        state["hosts"] = {}
        inventory_path().unlink(missing_ok=True)
        known_hosts().unlink(missing_ok=True)
    _log(f"down: {len(hosts)} host(s) removed")
    return len(hosts)


def _mounted_under(top: Path) -> list[str]:
    prefix = str(top) + "/"
    return [
        line.split()[1]
        for line in Path("/proc/self/mounts").read_text().splitlines()
        if line.split()[1].startswith(prefix)
    ]


def host_data(host: Host) -> dict:
    """pyinfra host data that reaches this host over SSH with its host key checked."""
    return {
        "ssh_hostname": "127.0.0.1",
        "ssh_port": host.ssh_port,
        "ssh_user": host.user,
        "ssh_key": str(client_key()),
        "ssh_known_hosts_file": str(known_hosts()),
        "ssh_strict_host_key_checking": "yes",
        "persist_dir": PERSIST_PATH,
        **({"_sudo": True} if host.user != "root" else {}),
    }


def _write_access(hosts: list[Host]) -> None:
    lines = []
    for host in sorted(hosts, key=lambda h: h.name):
        for pub in sorted((host.dir / "ssh").glob("*.pub")):
            kind, key = pub.read_text().split()[:2]
            lines.append(f"[127.0.0.1]:{host.ssh_port} {kind} {key}\n")
    known_hosts().write_text("".join(lines))
    entries = ",\n".join(f"    ({h.name!r}, {host_data(h)!r})" for h in hosts)
    inventory_path().write_text(
        '"""pyinfra inventory of the test hosts; written by `python -m tests.testbed up`."""\n\n'
        f"testbed = [\n{entries},\n]\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.testbed", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start fresh hosts and write their pyinfra inventory")
    p_up.add_argument("--hosts", type=int, default=1)
    p_up.add_argument("--release", default="bookworm")
    p_up.add_argument("--init", choices=INITS, default="none", help="systemd: boot systemd as PID 1 (a VM)")
    p_up.add_argument("--user", default="root", help="log in as this user with passwordless sudo (needs systemd)")
    p_up.add_argument("--prefix", default="tb", help="host names: PREFIX1, PREFIX2 ...")
    p_reset = sub.add_parser("reset", help="restore a host's root fs to fresh, keep /persist")
    p_reset.add_argument("name")
    p_restart = sub.add_parser("restart", help="stop a host and boot it again, its disk kept (a reboot)")
    p_restart.add_argument("name")
    p_remove = sub.add_parser("remove", help="stop and delete one host")
    p_remove.add_argument("name")
    sub.add_parser("down", help="stop and delete every host")
    sub.add_parser("status", help="list the hosts")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("the testbed mounts file systems and makes namespaces: run it as root")
    try:
        if args.cmd == "up":
            up(args.hosts, args.release, args.prefix, args.init, args.user)
            print(inventory_path())
        elif args.cmd == "reset":
            reset(args.name)
        elif args.cmd == "restart":
            restart(args.name)
        elif args.cmd == "remove":
            remove(args.name)
        elif args.cmd == "down":
            down()
        else:
            for h in load_hosts():
                alive = "up" if _process_alive(h.pid, str(h.root)) else "down"
                print(f"{h.name}\t{h.release}\t{h.init}\t{h.user}@127.0.0.1:{h.ssh_port}\t{alive}")
    except (TestbedError, subprocess.CalledProcessError) as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
