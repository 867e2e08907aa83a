"""Copy a directory from the controller to the host: changed files only, symlinks followed (a
wheelhouse or a HuggingFace snapshot links its files; the host needs their content)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation

import remote
from facts.digests import FileDigest, FileDigests
from facts.files import TreeEntries
from run import controller_cache
from tasks.downloads import private_upload


def local_files(src: str) -> dict[str, Path]:
    """Relative path -> the real file behind it, for every file under src (links followed)."""
    out = {}
    for root, _, names in os.walk(src, followlinks=True):
        for name in names:
            path = Path(root) / name
            out[str(path.relative_to(src))] = path.resolve()
    return out


# A controller file's sha256, read once per run while its size and time stay the same.
sha256 = controller_cache.file_sha256


def tree_digest(src: str) -> str:
    """One digest of every file under src (relative names and contents): a path: model's content, which
    its repository entry carries so that a change of its files reloads it."""
    h = hashlib.sha256()
    for rel, path in sorted(local_files(src).items()):
        h.update(rel.encode() + b"\0" + sha256(path).encode() + b"\0")
    return h.hexdigest()


@operation()
def no_extra_files(dest: str, keep: list[str], python: str = "python3"):
    """Remove files under dest that the controller's directory no longer has (names read NUL-safe;
    the host's prune.py removes only what lies inside dest)."""
    extra = sorted(set(host.get_fact(TreeEntries, dest, "files")) - set(keep))
    if not extra:
        host.noop(f"{dest} holds no extra files")
        return
    yield remote.python(python, "prune.py", "--empty-dirs", dest, *(remote.hex_name(n) for n in extra))


def _sha_and_mode(have: dict[str, FileDigest | None], path: str) -> tuple[str, str]:
    got = have.get(path)
    return (got["sha256"], got["mode"]) if got else ("", "")


@operation()
def files_put(sources: dict[str, str], seed_from: str = "", root: str = ""):
    """Each dest (dest -> a file on the controller) holds that file's content, mode 0644: sent only where
    its sha256 differs, through a private staging directory (tasks/downloads/private_upload.py). seed_from: a folder
    of earlier versions of root (its siblings): a file one of them holds with the same sha256 is linked
    from there (a hard link: uploads replace a file by renaming, never in place) instead of sent."""
    have = host.get_fact(FileDigests, paths=list(sources))
    candidates: dict[str, list[str]] = {}
    if seed_from and root:
        siblings = [f"{seed_from}/{n}" for n in host.get_fact(TreeEntries, seed_from, "children")]
        siblings = [s for s in siblings if s != root]
        candidates = {dest: [f"{s}{dest[len(root) :]}" for s in siblings] for dest in sources}
    seeds = (
        host.get_fact(FileDigests, paths=sorted({c for cs in candidates.values() for c in cs})) if candidates else {}
    )
    changed = False
    for dest, src in sources.items():
        got = have.get(dest)
        digest = sha256(src)
        if got and got["sha256"] == digest:
            if got["mode"] != "644":
                changed = True
                yield StringCommand("chmod", "644", QuoteString(dest))
            continue
        changed = True
        seed = next((c for c in candidates.get(dest, []) if _sha_and_mode(seeds, c) == (digest, "644")), None)
        if seed:
            parent = QuoteString(dest.rsplit("/", 1)[0])
            yield StringCommand("mkdir", "-p", parent, "&&", "ln", "-f", QuoteString(seed), QuoteString(dest))
            continue
        yield private_upload.put(dest, src, "644")
    if not changed:
        host.noop(f"{len(sources)} file(s) as on the controller")


@deploy("Upload a directory")
def directory(src: str, dest: str, label: str, seed_from: str = "") -> None:
    """dest mirrors src: each changed file sent (compared by checksum), no extra files left. seed_from: a
    folder of dest's earlier versions, whose identical files are linked instead of sent (files_put)."""
    wanted = local_files(src)
    files_put(
        name=f"{label}: files",
        sources={f"{dest}/{rel}": str(real) for rel, real in sorted(wanted.items())},
        seed_from=seed_from,
        root=dest,
    )
    no_extra_files(name=f"{label}: no extra files", dest=dest, keep=sorted(wanted))
