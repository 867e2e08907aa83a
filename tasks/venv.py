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


def pip_requirement(name: str, version: str) -> str:
    """An exact pip requirement, with the package's extras."""
    return f"{name}{EXTRAS.get(name, '')}=={version}"


def wheelhouse_key(requirements: dict[str, str], sources: list[str]) -> str:
    """A wheelhouse per set of pins and sources: a changed pin downloads into a new one."""
    text = "\n".join([*(f"{k}=={v}" for k, v in sorted(requirements.items())), *sources])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@operation()
def created(python: str, venv_dir: str, python_minor: str):
    """A venv at venv_dir made from `python` (the stub's minor version); a wrong one is replaced."""
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
):
    """Every wheel the pins need is in wheelhouse (marked complete), downloaded once from the sources."""
    marker = f"{wheelhouse}/.complete"
    if host.get_fact(File, path=marker):
        host.noop(f"wheelhouse {wheelhouse} complete")
        return
    pins = [QuoteString(pip_requirement(k, v)) for k, v in requirements.items()]
    yield StringCommand(
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
def packages_installed(venv_dir: str, wheelhouse: str, requirements: dict[str, str]):
    """The venv holds exactly these versions, installed from the wheelhouse with no index."""
    venv = host.get_fact(VenvPackages, venv_dir)
    have = (venv or {}).get("packages", {})
    differ = {k: v for k, v in requirements.items() if have.get(k) != v}
    if not differ:
        host.noop(f"venv has {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    yield StringCommand(
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
