"""A host's life on this machine: its overlay root, its PID 1 (sshd, or systemd with a cgroup subtree
of its own) in new namespaces, a clean or hard stop, and the unmounting after."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from testbed.config import CGROUP, Host, TestbedError, _run


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
            raise TestbedError(
                f"sshd of {host.name} exited ({proc.returncode}): " + " | ".join(tail) + _holder(host.ssh_port)
            )
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


def _holder(port: int) -> str:
    """Who listens on the port, as `ss` names it (for an "Address already in use"); "" where none does."""
    res = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=False)
    return f"; port {port} is held by: {res.stdout.strip()}" if res.stdout.strip() else ""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as sshd binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _mounted_under(top: Path) -> list[str]:
    prefix = str(top) + "/"
    return [
        line.split()[1]
        for line in Path("/proc/self/mounts").read_text().splitlines()
        if line.split()[1].startswith(prefix)
    ]
