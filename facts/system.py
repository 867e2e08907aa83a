"""Facts about the operating system: release, architecture, C runtime, init system."""

from __future__ import annotations

import hashlib
import re
import shlex
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from config.versions import version_key
from remote import shell


class OsReleaseData(TypedDict):
    id: str  # "debian", "ubuntu"
    version_id: str  # "12", "22.04"
    codename: str  # "bookworm", "jammy"
    id_like: str
    pretty_name: str
    arch: str  # `uname -m`: "x86_64", "aarch64"


class OsRelease(FactBase[OsReleaseData | None]):
    """The host's /etc/os-release and machine architecture; None where neither is readable."""

    def command(self) -> StringCommand:
        return shell("os_release.sh")

    def process(self, output: list[str]) -> OsReleaseData | None:
        values: dict[str, str] = {}
        for line in output:
            key, sep, raw = line.partition("=")
            if not sep or not re.fullmatch(r"[A-Z_]+", key):
                continue
            try:
                parts = shlex.split(raw)
            except ValueError:
                continue
            values[key] = parts[0] if parts else ""
        if "ID" not in values:
            return None
        return OsReleaseData(
            id=values["ID"].lower(),
            version_id=values.get("VERSION_ID", ""),
            codename=values.get("VERSION_CODENAME", "") or values.get("UBUNTU_CODENAME", ""),
            id_like=values.get("ID_LIKE", ""),
            pretty_name=values.get("PRETTY_NAME", ""),
            arch=values.get("ARCH", ""),
        )


class CRuntimeData(TypedDict):
    glibc: str | None  # "2.36"
    glibcxx: str | None  # highest GLIBCXX_ symbol version in libstdc++, "3.4.30"


class CRuntime(FactBase[CRuntimeData]):
    """glibc version and the highest GLIBCXX_ version the host's libstdc++.so.6 provides."""

    def command(self) -> StringCommand:
        return shell("c_runtime.sh")

    @staticmethod
    def default() -> CRuntimeData:
        return CRuntimeData(glibc=None, glibcxx=None)

    def process(self, output: list[str]) -> CRuntimeData:
        glibc = None
        glibcxx: list[str] = []
        for line in output:
            m = re.fullmatch(r"glibc (\d+\.\d+)", line.strip())
            if m:
                glibc = m.group(1)
            m = re.fullmatch(r"GLIBCXX_(\d+(?:\.\d+)+)", line.strip())
            if m:
                glibcxx.append(m.group(1))
        return CRuntimeData(glibc=glibc, glibcxx=max(glibcxx, key=version_key) if glibcxx else None)


class InitSystemData(TypedDict):
    pid1: str  # the command name of PID 1: "systemd", "init", "sshd", "docker-init" ...
    systemd: bool  # systemd is PID 1 and booted the host: units can be used
    notebook: str | None  # "colab", "kaggle" or None
    content_dir: bool  # a notebook's /content exists


class InitSystem(FactBase[InitSystemData]):
    """Whether systemd runs the host (else we start the server ourselves) and notebook hints.

    Only the names of notebook environment variables are read, never their values.
    """

    def command(self) -> StringCommand:
        return shell("init_system.sh")

    @staticmethod
    def default() -> InitSystemData:
        return InitSystemData(pid1="", systemd=False, notebook=None, content_dir=False)

    def process(self, output: list[str]) -> InitSystemData:
        data = self.default()
        booted = False
        for line in output:
            if line.startswith("PID1="):
                data["pid1"] = line[5:].strip()
            elif line == "SYSTEMD_BOOTED":
                booted = True
            elif line == "CONTENT_DIR":
                data["content_dir"] = True
            elif line.startswith("ENV=COLAB_"):
                data["notebook"] = "colab"
            elif line.startswith("ENV=KAGGLE_") and not data["notebook"]:
                data["notebook"] = "kaggle"
        data["systemd"] = booted and data["pid1"] == "systemd"
        return data


class AccountData(TypedDict):
    uid: int
    home: str
    shell: str
    made: bool  # the provisioner's record names it: made by it


class Account(FactBase[AccountData | None]):
    """A user's account as the system knows it, and whether the provisioner made it (its record, a file
    only root writes); None where there is no such user."""

    def command(self, user: str, record: str) -> StringCommand:
        return shell("account.sh", user, record)

    def process(self, output: list[str]) -> AccountData | None:
        entry = next((line.split("\t", 1)[1] for line in output if line.startswith("PASSWD\t")), "")
        fields = entry.split(":")
        if len(fields) != 7 or not fields[2].isdigit():
            return None
        return AccountData(uid=int(fields[2]), home=fields[5], shell=fields[6], made="MADE" in output)


class MachineId(FactBase[str]):
    """Who the host is, whatever its name in an inventory: a sha256 (16 hex) of its machine id (systemd's or
    D-Bus's), else of its SSH host key; "" where it has neither. Two inventories' `gpu1` differ by it."""

    def command(self) -> StringCommand:
        return StringCommand(
            "cat /etc/machine-id /var/lib/dbus/machine-id /etc/ssh/ssh_host_ed25519_key.pub"
            " /etc/ssh/ssh_host_rsa_key.pub 2>/dev/null || true"
        )

    @staticmethod
    def default() -> str:
        return ""

    def process(self, output: list[str]) -> str:
        for line in output:
            words = line.split()
            value = words[1] if len(words) > 1 and words[0].startswith("ssh-") else line.strip()
            if value and set(value) != {"0"} and value != "uninitialized":  # how an unset machine-id reads
                return hashlib.sha256(value.encode()).hexdigest()[:16]
        return ""
