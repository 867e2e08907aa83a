"""Who a host is and who may log in: its SSH host keys, the test bed's client key, a VM's name and
machine id, a login user with passwordless sudo."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from testbed.config import _NAME_RE, STATE_DIR, Host, TestbedError, _run


def client_key() -> Path:
    """The key the tests log in with; made once per testbed."""
    key = STATE_DIR / "id_ed25519"
    if not key.exists():
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "testbed", "-f", str(key)])
    return key


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
