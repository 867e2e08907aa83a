"""The Triton server: unpacked into a versioned directory beside the one in use."""

from __future__ import annotations

import json

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from config.layout import Layout
from facts.triton import TritonInstall, TritonInstallData
from planner.assessment import Decisions


def version_dir_name(version: str, sha256: str, stub_python: str, backends: tuple[str, ...] = ()) -> str:
    """A directory per build, stub and set of backends kept: a changed artifact, Python or backend set never
    overwrites the old one."""
    kept = "-" + "-".join(backends) if backends else ""
    return f"{version or 'tarball'}-{sha256[:12]}-py{stub_python}{kept}"


def installed_dir(layout: Layout, decisions: Decisions) -> str:
    """The versioned directory `current` points at once this build is installed."""
    artifact = decisions.chosen_artifact
    name = version_dir_name(artifact.version, artifact.sha256, decisions.python, artifact.backends)
    return f"{layout.versions}/{name}"


def complete(found: TritonInstallData | None, sha256: str, stub_python: str, backends: tuple[str, ...] = ()) -> bool:
    """The install (its TritonInstall fact) is whole and was unpacked from the artifact of this sha256, with
    the stub of this Python: its manifest, written by root once the unpack checked the sha256, says so."""
    return bool(
        found
        and found["server"]
        and found["manifest"].get("sha256") == sha256
        and found["manifest"].get("stub_python") == stub_python
        and found["manifest"].get("backends", "") == ",".join(backends)
    )


def installed_from(layout: Layout, decisions: Decisions) -> bool:
    """This host's install of the chosen artifact is complete: the artifact itself is not needed this run."""
    artifact = decisions.chosen_artifact
    found = host.get_fact(TritonInstall, installed_dir(layout, decisions))
    return complete(found, artifact.sha256, decisions.chosen_python, artifact.backends)


@operation()
def installed(
    source: str,
    archive: str,
    sha256: str,
    version: str,
    stub_python: str,
    versions_dir: str,
    strip_components: int = 0,
    python: str = "python3",
    stub_fixes: dict[str, str] | None = None,
    backends: tuple[str, ...] = (),
):
    """A complete install of this artifact with the stub of stub_python in its own directory under
    versions_dir, beside the one the server runs; the server's step switches `current` to it.

    A stub that is for another Python is refused by the unpack, naming the fix from stub_fixes
    (the stub's Python minor -> what to do on this host; the script takes it as JSON). backends: of an
    image, the backends kept (the others left out); () all.
    The unpack goes to a new directory, renamed into place when complete.
    """
    target = f"{versions_dir}/{version_dir_name(version, sha256, stub_python, backends)}"
    found = host.get_fact(TritonInstall, target)
    if not complete(found, sha256, stub_python, backends):
        yield remote.python(
            python,
            "unpack_triton.py",
            source,
            archive,
            target,
            stub_python,
            sha256,
            str(strip_components),
            version,
            json.dumps(stub_fixes or {}),
            *([",".join(backends)] if backends else []),
        )
    elif found.get("writable"):  # an install unpacked before modes were masked (0666 files)
        yield StringCommand("chmod", "-R", "go-w", QuoteString(target))
    else:
        host.noop(f"{target} is complete")
