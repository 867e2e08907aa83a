"""The test bed's commands: up, reset, restart, remove, down; each under the state lock."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import asdict

from testbed import disk
from testbed.boot import _mount_root, _mounted_under, _port_free, _start, _stop, _unmount_under
from testbed.config import _NAME_RE, FIRST_SSH_PORT, LAST_SSH_PORT, STATE_DIR, Host, TestbedError, _log
from testbed.identity import _add_sudo_user, _configure_vm, _install_identity, client_key
from testbed.images import ensure_base
from testbed.inventory import inventory_path, known_hosts, write_access
from testbed.state import _locked, load_hosts


def _boot(host: Host) -> None:
    base = ensure_base(host.release, host.init)
    _mount_root(host, base)
    _install_identity(host)
    if host.init == "systemd":
        _configure_vm(host)
    if host.user != "root":
        _add_sudo_user(host)
    _start(host)


# --- commands


def up(
    count: int = 1,
    release: str = "bookworm",
    prefix: str = "tb",
    init: str = "none",
    user: str = "root",
    fresh: bool = False,
) -> list[Host]:
    """Start count fresh hosts (more if some already run) and write their inventory. fresh: first take
    down every host the bed holds, as a test session does at its start (a run killed before its end
    leaves its hosts running and recorded: the next run's hosts would get other names and ports)."""
    if fresh and load_hosts():
        _log("taking down the hosts an earlier run left in this bed")
        down()
    if not _NAME_RE.match(prefix):
        raise TestbedError(f"host name prefix {prefix!r}: use lower-case letters and digits")
    if user != "root" and init != "systemd":
        raise TestbedError("--user needs --init systemd: a VM image has sudo, a notebook image has not")
    ensure_base(release, init)
    client_key()
    t0 = time.monotonic()
    with _locked() as state:
        disk.mounted()
        hosts = {n: Host(**h) for n, h in state["hosts"].items()}
        used = {h.ssh_port for h in hosts.values()}
        made: list[Host] = []
        try:
            i = 1
            while len(made) < count:
                name = f"{prefix}{i}"
                i += 1
                if name in hosts:
                    continue
                port = FIRST_SSH_PORT
                while port in used or not _port_free(port):
                    port += 1
                    if port > LAST_SSH_PORT:
                        raise TestbedError(
                            f"no free SSH port in this test bed's range {FIRST_SSH_PORT}..{LAST_SSH_PORT} "
                            "(testbed/ports.py): `python -m testbed down` stops its hosts"
                        )
                used.add(port)
                host = Host(name=name, release=release, ssh_port=port, init=init, user=user)
                _boot(host)
                hosts[name] = host
                made.append(host)
                state["hosts"][name] = asdict(host)
        except BaseException:  # those booted by this call are not recorded: stopped, never left behind
            for host in made:
                _teardown(host)
            raise
        write_access(list(hosts.values()))
    _log(f"{len(made)} host(s) up in {time.monotonic() - t0:.2f}s; inventory {inventory_path()}")
    return made


def _teardown(host: Host) -> None:
    """A host stopped, its mounts undone and its files gone (none removed through a mount left behind)."""
    _stop(host)
    _unmount_under(host.dir)
    if _mounted_under(host.dir):
        raise TestbedError(f"mounts remain under {host.dir}; see /proc/self/mounts")
    shutil.rmtree(host.dir, ignore_errors=True)


def _changed(name: str, what: str, change: Callable[[Host], None]) -> Host:
    """Apply change to the recorded host NAME under the state lock, record it again, log how long."""
    with _locked() as state:
        if name not in state["hosts"]:
            raise TestbedError(f"no test host {name!r}; `python -m testbed status` lists them")
        host = Host(**state["hosts"][name])
        t0 = time.monotonic()
        change(host)
        state["hosts"][name] = asdict(host)
    _log(f"{what} {name} in {time.monotonic() - t0:.2f}s")
    return host


def _wipe_and_boot(host: Host) -> None:
    _stop(host)
    _unmount_under(host.root)
    for sub in ("upper", "work"):
        shutil.rmtree(host.dir / sub, ignore_errors=True)
    _boot(host)


def _reboot(host: Host) -> None:
    _stop(host, graceful=True)
    _start(host)


def reset(name: str) -> Host:
    """Restore a host's root file system to fresh; keep its /persist exactly as it was."""
    return _changed(name, "reset", _wipe_and_boot)


def restart(name: str) -> Host:
    """Stop a host (a clean shutdown where systemd runs it) and boot it again, its disk kept: a reboot."""
    return _changed(name, "restarted", _reboot)


def throttle(name: str, mbps: float, latency_ms: float = 2.0, drive: bool = False) -> Host:
    """Serve the host's /persist at MBPS MB/s each way with LATENCY_MS per open (a network drive; drive: with
    Google Drive's semantics), then reboot the host onto it (its disk kept). mbps 0: back to the plain directory."""
    from testbed import throttle as slow

    def change(host: Host) -> None:
        _stop(host, graceful=True)
        if mbps:
            slow.mount(host, mbps, latency_ms, drive)
        else:
            slow.unmount(host)
        _start(host)

    return _changed(name, f"/persist at {mbps:g} MB/s for" if mbps else "/persist unthrottled for", change)


def remove(name: str) -> None:
    """Stop and delete one host, leaving the others running (a module's own host)."""
    with _locked() as state:
        if name not in state["hosts"]:
            return
        host = Host(**state["hosts"].pop(name))
        _teardown(host)
        write_access([Host(**h) for h in state["hosts"].values()])
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
        disk.released()
        state["hosts"] = {}
        inventory_path().unlink(missing_ok=True)
        known_hosts().unlink(missing_ok=True)
    _log(f"down: {len(hosts)} host(s) removed")
    return len(hosts)
