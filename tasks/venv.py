"""The venv the python backend runs models in: a pinned torch variant and the model packages.

Wheels are downloaded once into a wheelhouse on the persistent path and installed from it
with --no-index, so a host re-provisioned after a reset installs without the network. A tar of
the finished venv (venv_snapshot) is kept there too: after a reset it is unpacked, in the
background while apt and Triton install, instead of pip installing every wheel again.
"""

from __future__ import annotations

import hashlib

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import File

import remote
from facts.venv import VenvData, VenvPackages

# Extras to install with a package (the verifier calls Triton over HTTP and gRPC).
EXTRAS = {"tritonclient": "[http,grpc]"}
# Stands in the venv while pip installs into it; left behind, it says that pip was cut off.
INSTALL_MARKER = ".pip-install-incomplete"
# Seconds a pip command waits for another pip on the same venv (torch alone takes minutes on a slow disk).
PIP_LOCK_TIMEOUT_S = 900


def pip_requirement(name: str, version: str) -> str:
    """An exact pip requirement, with the package's extras."""
    return f"{name}{EXTRAS.get(name, '')}=={version}"


def wheelhouse_key(requirements: dict[str, str], sources: list[str]) -> str:
    """A wheelhouse per set of pins and sources: a changed pin downloads into a new one."""
    text = "\n".join([*(f"{k}=={v}" for k, v in sorted(requirements.items())), *sources])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def snapshot_key(wheelhouse_key_: str, python: str, venv_dir: str) -> str:
    """A snapshot per wheelhouse, interpreter and place: a venv names both its python and its path."""
    return hashlib.sha256(f"{wheelhouse_key_}\n{python}\n{venv_dir}".encode()).hexdigest()[:16]


def _usable(venv: VenvData | None, python_minor: str) -> bool:
    """The venv exists, is made from this Python minor and has pip."""
    return bool(venv and venv["python"].startswith(python_minor + ".") and venv["packages"].get("pip"))


def _matches(venv: VenvData | None, python_minor: str, requirements: dict[str, str]) -> bool:
    """The venv is usable and holds exactly these versions."""
    return _usable(venv, python_minor) and all(venv["packages"].get(k) == v for k, v in requirements.items())


def _restores(venv: VenvData | None, python_minor: str, requirements: dict[str, str], snapshot: str) -> bool:
    """The snapshot is to be unpacked: the venv (its fact) does not match and a snapshot of one that
    did is kept. Each venv operation asks the same question, so that a plan made before any of them
    runs (pyinfra without -y) agrees with itself."""
    if not snapshot or _matches(venv, python_minor, requirements):
        return False
    return bool(host.get_fact(File, path=snapshot))


@operation()
def restore_started(venv_dir: str, python_minor: str, requirements: dict[str, str], snapshot: str, token: str):
    """Start unpacking the venv snapshot in the background, so that the steps that do not need the
    venv (apt, Triton) run meanwhile; `created` with the same token waits for it."""
    if not _restores(host.get_fact(VenvPackages, venv_dir), python_minor, requirements, snapshot):
        host.noop("no venv to unpack from a snapshot")
        return
    yield remote.shell("venv_restore_start.sh", venv_dir, snapshot, token, remote.source("venv_restore.sh"))


@operation()
def created(
    python: str,
    venv_dir: str,
    python_minor: str,
    requirements: dict[str, str],
    snapshot: str = "",
    restore_token: str = "",
):
    """A venv at venv_dir made from `python` (the stub's minor version); a wrong one is replaced.

    With a snapshot of a finished venv on the persistent path, a missing or wrong venv is
    unpacked from it (seconds) rather than made empty and filled by pip (a minute): here, or
    by the background job `restore_started` began with restore_token, which this waits for
    (its log is there when it was started: it may have finished, or failed, by now).
    """
    if restore_token and host.get_fact(File, path=f"{venv_dir}.restore-{restore_token}.log"):
        yield remote.shell("venv_restore_wait.sh", venv_dir, restore_token)
        return
    venv = host.get_fact(VenvPackages, venv_dir)
    if _restores(venv, python_minor, requirements, snapshot):
        yield StringCommand(*pip_locked(venv_dir), remote.shell("venv_restore.sh", venv_dir, snapshot))
        return
    if _usable(venv, python_minor):
        host.noop(f"venv {venv_dir} is Python {venv['python']}")
        return
    # A venv is not relocatable (its scripts name its path), so it is made at venv_dir itself;
    # a replaced one waits aside and comes back if the new one cannot be made.
    yield remote.shell("venv_create.sh", python, venv_dir)


@operation()
def snapshot_saved(venv_dir: str, snapshot: str):
    """A tar of the finished venv is on the persistent path (written aside, then renamed); older
    snapshots beside it are removed. Runs after the packages are in, so it holds a complete venv."""
    if host.get_fact(File, path=snapshot):
        host.noop(f"venv snapshot {snapshot} kept")
        return
    folder, name = snapshot.rsplit("/", 1)
    yield remote.shell("venv_snapshot.sh", venv_dir, folder, snapshot, name)


def pip_locked(venv_dir: str) -> list:
    """`flock -w SECONDS VENV.lock`: one pip at a time per venv. A pip that a dropped connection left
    running keeps the lock, so the next run waits for it instead of writing the same files at once."""
    return ["flock", "-w", str(PIP_LOCK_TIMEOUT_S), QuoteString(f"{venv_dir}.lock")]


def _pip_sources(torch_index: str | None, index_url: str, find_links: str) -> list[str]:
    args = []
    if index_url:
        args += ["--index-url", index_url]
    if torch_index:
        args += ["--extra-index-url", torch_index]
    if find_links:
        args += ["--find-links", find_links]
    return args


@operation()
def wheelhouse_filled(
    venv_dir: str,
    wheelhouse: str,
    requirements: dict[str, str],
    pip_cache: str,
    torch_index: str | None = None,
    index_url: str = "",
    find_links: str = "",
    python_minor: str = "",
    snapshot: str = "",
    cert: str = "",
):
    """Every wheel the pins need is in wheelhouse (marked complete), downloaded once from the sources.
    cert: a CA bundle for pip to trust instead of its own (certifi's), such as the host's store."""
    marker = f"{wheelhouse}/.complete"
    if host.get_fact(File, path=marker):
        host.noop(f"wheelhouse {wheelhouse} complete")
        return
    if _restores(host.get_fact(VenvPackages, venv_dir), python_minor, requirements, snapshot):
        host.noop(f"the venv comes from {snapshot}")
        return
    pins = [QuoteString(pip_requirement(k, v)) for k, v in requirements.items()]
    yield StringCommand(
        *pip_locked(venv_dir),
        QuoteString(f"{venv_dir}/bin/pip"),
        "download",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "--cache-dir",
        QuoteString(pip_cache),
        "--dest",
        QuoteString(wheelhouse),
        *(QuoteString(a) for a in _pip_sources(torch_index, index_url, find_links)),
        *(["--cert", QuoteString(cert)] if cert else []),
        *pins,
        "&&",
        "touch",
        QuoteString(marker),
    )


@operation()
def packages_installed(
    venv_dir: str, wheelhouse: str, requirements: dict[str, str], python_minor: str = "", snapshot: str = ""
):
    """The venv holds exactly these versions, installed from the wheelhouse with no index.

    A marker file stands in the venv while pip runs: one left behind means a pip was cut off, and
    a package it was writing can look installed (its metadata in place) with its files half written.
    Then every package is installed again (--force-reinstall, still from the wheelhouse).
    """
    venv = host.get_fact(VenvPackages, venv_dir)
    if _restores(venv, python_minor, requirements, snapshot):
        host.noop(f"the venv comes from {snapshot} with {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    marker = f"{venv_dir}/{INSTALL_MARKER}"
    interrupted = bool(host.get_fact(File, path=marker))
    have = (venv or {}).get("packages", {})
    differ = {k: v for k, v in requirements.items() if have.get(k) != v}
    if not differ and not interrupted:
        host.noop(f"venv has {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    yield StringCommand(
        "touch",
        QuoteString(marker),
        "&&",
        *pip_locked(venv_dir),
        QuoteString(f"{venv_dir}/bin/pip"),
        "install",
        "--disable-pip-version-check",
        "--no-index",
        "--no-compile",
        *(["--force-reinstall"] if interrupted else []),
        "--progress-bar",
        "off",
        "--find-links",
        QuoteString(wheelhouse),
        *(QuoteString(pip_requirement(k, v)) for k, v in requirements.items()),
        "&&",
        "rm",
        "-f",
        QuoteString(marker),
    )
