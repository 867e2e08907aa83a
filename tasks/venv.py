"""The venv the python backend runs models in: a pinned torch variant and the model packages.

Wheels are downloaded once into a wheelhouse on the persistent path and installed from it
with --no-index, so a host re-provisioned after a reset installs without the network.
"""

from __future__ import annotations

import hashlib

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import File

from facts.venv import VenvPackages

# Extras to install with a package (the verifier calls Triton over HTTP and gRPC).
EXTRAS = {"tritonclient": "[http,grpc]"}
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


def _matches(venv: dict | None, python_minor: str, requirements: dict[str, str]) -> bool:
    """The venv is made from this Python minor and holds exactly these versions."""
    if not venv or not venv["python"].startswith(python_minor + ".") or not venv["packages"].get("pip"):
        return False
    return all(venv["packages"].get(k) == v for k, v in requirements.items())


def _restores(venv_dir: str, python_minor: str, requirements: dict[str, str], snapshot: str) -> bool:
    """This run unpacks the snapshot: the venv does not match and a snapshot of one that did is kept.
    Each venv operation asks the same question of the same facts, so they agree before any runs."""
    if not snapshot or _matches(host.get_fact(VenvPackages, venv_dir), python_minor, requirements):
        return False
    return bool(host.get_fact(File, path=snapshot))


# $1 venv, $2 snapshot: unpack beside the venv, then swap; a damaged snapshot is removed, the venv kept.
_RESTORE = (
    'v="$1"; snap="$2"; rm -rf "$v.new" "$v.old"; mkdir -p "$v.new"\n'
    'if ! tar -xf "$snap" -C "$v.new"; then rm -rf "$v.new" "$snap"\n'
    '  echo "venv snapshot $snap could not be unpacked; removed it. Run again to install from the wheelhouse." >&2\n'
    "  exit 1; fi\n"
    '[ ! -e "$v" ] || mv -T "$v" "$v.old"; mv -T "$v.new" "$v"; rm -rf "$v.old"\n'
)


@operation()
def created(python: str, venv_dir: str, python_minor: str, requirements: dict[str, str], snapshot: str = ""):
    """A venv at venv_dir made from `python` (the stub's minor version); a wrong one is replaced.

    With a snapshot of a finished venv on the persistent path, a missing or wrong venv is
    unpacked from it (seconds) rather than made empty and filled by pip (a minute).
    """
    if _restores(venv_dir, python_minor, requirements, snapshot):
        yield StringCommand(
            *pip_locked(venv_dir), "sh", "-c", QuoteString(_RESTORE), "_", QuoteString(venv_dir), QuoteString(snapshot)
        )
        return
    venv = host.get_fact(VenvPackages, venv_dir)
    if venv and venv["python"].startswith(python_minor + ".") and venv["packages"].get("pip"):
        host.noop(f"venv {venv_dir} is Python {venv['python']}")
        return
    # A venv is not relocatable (its scripts name its path), so it is made at venv_dir itself;
    # a replaced one waits aside and comes back if the new one cannot be made.
    yield StringCommand(
        "sh",
        "-c",
        QuoteString(
            'v="$2"; rm -rf "$v.old"; [ ! -e "$v" ] || mv -T "$v" "$v.old";'
            ' if "$1" -m venv "$v"; then rm -rf "$v.old"; else rm -rf "$v";'
            ' [ ! -e "$v.old" ] || mv -T "$v.old" "$v"; exit 1; fi'
        ),
        "_",
        QuoteString(python),
        QuoteString(venv_dir),
    )


@operation()
def snapshot_saved(venv_dir: str, snapshot: str):
    """A tar of the finished venv is on the persistent path (written aside, then renamed); older
    snapshots beside it are removed. Runs after the packages are in, so it holds a complete venv."""
    if host.get_fact(File, path=snapshot):
        host.noop(f"venv snapshot {snapshot} kept")
        return
    folder, name = snapshot.rsplit("/", 1)
    yield StringCommand(
        "sh",
        "-c",
        QuoteString(
            'mkdir -p "$2" && tar -cf "$3.part" -C "$1" . && mv "$3.part" "$3"'
            ' && find "$2" -maxdepth 1 -name "*.tar*" ! -name "$4" -delete'
        ),
        "_",
        QuoteString(venv_dir),
        QuoteString(folder),
        QuoteString(snapshot),
        QuoteString(name),
    )


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
):
    """Every wheel the pins need is in wheelhouse (marked complete), downloaded once from the sources."""
    if _restores(venv_dir, python_minor, requirements, snapshot):
        host.noop(f"the venv comes from {snapshot}")
        return
    marker = f"{wheelhouse}/.complete"
    if host.get_fact(File, path=marker):
        host.noop(f"wheelhouse {wheelhouse} complete")
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
        *pins,
        "&&",
        "touch",
        QuoteString(marker),
    )


@operation()
def packages_installed(
    venv_dir: str, wheelhouse: str, requirements: dict[str, str], python_minor: str = "", snapshot: str = ""
):
    """The venv holds exactly these versions, installed from the wheelhouse with no index."""
    if _restores(venv_dir, python_minor, requirements, snapshot):
        host.noop(f"the venv comes from {snapshot} with {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    venv = host.get_fact(VenvPackages, venv_dir)
    have = (venv or {}).get("packages", {})
    differ = {k: v for k, v in requirements.items() if have.get(k) != v}
    if not differ:
        host.noop(f"venv has {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    yield StringCommand(
        *pip_locked(venv_dir),
        QuoteString(f"{venv_dir}/bin/pip"),
        "install",
        "--disable-pip-version-check",
        "--no-index",
        "--no-compile",
        "--progress-bar",
        "off",
        "--find-links",
        QuoteString(wheelhouse),
        *(QuoteString(pip_requirement(k, v)) for k, v in requirements.items()),
    )
