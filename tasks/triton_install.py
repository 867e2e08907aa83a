"""The Triton server: unpacked into a versioned directory beside the one in use."""

from __future__ import annotations

import json

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from compat.assessment import Decisions
from config.layout import Layout
from facts.triton import TritonInstall


def version_dir_name(version: str, sha256: str, stub_python: str) -> str:
    """A directory per build and stub: a changed artifact or Python never overwrites the old one."""
    return f"{version or 'tarball'}-{sha256[:12]}-py{stub_python}"


def installed_dir(layout: Layout, decisions: Decisions) -> str:
    """The versioned directory `current` points at once this build is installed."""
    artifact = decisions.chosen_artifact
    return f"{layout.versions}/{version_dir_name(artifact.version, artifact.sha256, decisions.python)}"


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
):
    """A complete install of this artifact with the stub of stub_python in its own directory under
    versions_dir, beside the one the server runs; the server's step switches `current` to it.

    A stub that is for another Python is refused by the unpack, naming the fix from stub_fixes
    (the stub's Python minor -> what to do on this host; the script takes it as JSON).
    The unpack goes to a new directory, renamed into place when complete.
    """
    target = f"{versions_dir}/{version_dir_name(version, sha256, stub_python)}"
    found = host.get_fact(TritonInstall, target)
    complete = bool(
        found
        and found["server"]
        and found["manifest"].get("sha256") == sha256
        and found["manifest"].get("stub_python") == stub_python
    )
    if not complete:
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
        )
    elif found.get("writable"):  # an install unpacked before modes were masked (0666 files)
        yield StringCommand("chmod", "-R", "go-w", QuoteString(target))
    else:
        host.noop(f"{target} is complete")
