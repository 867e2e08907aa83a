"""Copy a directory from the controller to the host: changed files only, symlinks followed (a
wheelhouse or a HuggingFace snapshot links its files; the host needs their content)."""

from __future__ import annotations

import os
from pathlib import Path

from pyinfra import host
from pyinfra.api import deploy, operation
from pyinfra.operations import files

import remote
from facts.files import TreeEntries


def local_files(src: str) -> dict[str, Path]:
    """Relative path -> the real file behind it, for every file under src (links followed)."""
    out = {}
    for root, _, names in os.walk(src, followlinks=True):
        for name in names:
            path = Path(root) / name
            out[str(path.relative_to(src))] = path.resolve()
    return out


@operation()
def no_extra_files(dest: str, keep: list[str], python: str = "python3"):
    """Remove files under dest that the controller's directory no longer has (names read NUL-safe;
    the host's prune.py removes only what lies inside dest)."""
    extra = sorted(set(host.get_fact(TreeEntries, dest, "files")) - set(keep))
    if not extra:
        host.noop(f"{dest} holds no extra files")
        return
    yield remote.python(python, "prune.py", "--empty-dirs", dest, *(remote.hex_name(n) for n in extra))


@deploy("Upload a directory")
def directory(src: str, dest: str, label: str) -> None:
    """dest mirrors src: each file put (compared by checksum, so unchanged files are not sent)."""
    wanted = local_files(src)
    for rel, real in sorted(wanted.items()):
        files.put(name=f"{label}: {rel}", src=str(real), dest=f"{dest}/{rel}", mode="644")
    no_extra_files(name=f"{label}: no extra files", dest=dest, keep=sorted(wanted))
