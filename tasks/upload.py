"""Copy a directory from the controller to the host: changed files only, symlinks followed (a
wheelhouse or a HuggingFace snapshot links its files; the host needs their content)."""

from __future__ import annotations

import os
from pathlib import Path

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.facts.files import FindFiles
from pyinfra.operations import files


def local_files(src: str) -> dict[str, Path]:
    """Relative path -> the real file behind it, for every file under src (links followed)."""
    out = {}
    for root, _, names in os.walk(src, followlinks=True):
        for name in names:
            path = Path(root) / name
            out[str(path.relative_to(src))] = path.resolve()
    return out


@operation()
def no_extra_files(dest: str, keep: list[str]):
    """Remove files under dest that the controller's directory no longer has."""
    found = host.get_fact(FindFiles, path=dest) or []
    wanted = {f"{dest}/{rel}" for rel in keep}
    extra = sorted(p for p in found if p not in wanted)
    if not extra:
        host.noop(f"{dest} holds no extra files")
        return
    yield StringCommand("rm", "-f", *(QuoteString(p) for p in extra))


@deploy("Upload a directory")
def directory(src: str, dest: str, label: str) -> None:
    """dest mirrors src: each file put (compared by checksum, so unchanged files are not sent)."""
    wanted = local_files(src)
    for rel, real in sorted(wanted.items()):
        files.put(name=f"{label}: {rel}", src=str(real), dest=f"{dest}/{rel}", mode="644")
    no_extra_files(name=f"{label}: no extra files", dest=dest, keep=sorted(wanted))
