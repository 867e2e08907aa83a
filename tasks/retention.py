"""Pruning (triton_keep_versions): older Triton installs, venvs, model repositories, wheelhouses and
downloads are removed, the newest kept, and never what the running server uses or this run made."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from facts.files import AgedEntries, AgedEntry, EntryKind, Links
from run import host_log

# Names a step leaves while it works (an unpack's .tmp, a venv's .new/.old, a download's .part):
# never counted or removed here; the step that made them cleans them up.
_IN_PROGRESS = re.compile(r"\.(tmp|new|old|part|partial)$|\.restore-")
# A venv's companions: its pip lock file, beside it.
_LOCK = ".lock"


@dataclass(frozen=True)
class Kept:
    """One folder whose entries are versions of one thing: `dir`, the kind of entry counted (directories
    or files), the names this run uses (always kept) and the links whose targets the running server
    uses (kept too)."""

    dir: str
    kind: EntryKind
    used: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    leftover: str = ""  # the suffix of what a step cut off left here (Triton's unpack: ".tmp"), removed once seen


def name_in(path: str) -> str:
    """The last part of a path: an entry's name in its folder (what a Kept's `used` names)."""
    return path.rsplit("/", 1)[-1]


def _group(name: str) -> str:
    """Downloads are kept per kind: Triton artifacts and standalone Pythons each keep their newest."""
    return "python" if name.startswith("cpython-") else "triton"


def to_remove(entries: list[AgedEntry], kind: EntryKind, keep: int, protected: set[str]) -> list[str]:
    """The names to remove: of the entries of this kind (newest first), every protected one is kept
    and the newest others until `keep` are kept per group; a removed venv's lock file goes with it."""
    counted = [e for e in entries if e["kind"] == kind and not _IN_PROGRESS.search(e["name"])]
    kept: dict[str, int] = {}
    for e in counted:
        if e["name"] in protected:
            kept[_group(e["name"])] = kept.get(_group(e["name"]), 0) + 1
    out = []
    for e in counted:
        if e["name"] in protected:
            continue
        g = _group(e["name"])
        if kept.get(g, 0) < keep:
            kept[g] = kept.get(g, 0) + 1
            continue
        out.append(e["name"])
    names = {e["name"] for e in entries}
    return out + [n + _LOCK for n in out if n + _LOCK in names]


@operation()
def pruned(folders: list[Kept], keep: int, report: str, python: str = "python3"):
    """In each folder only the `keep` newest versions and those in use remain; what was removed and
    the bytes that freed are shown in the run's output."""
    have = host.get_fact(AgedEntries, [f.dir for f in folders])
    links = host.get_fact(Links, sorted({link for f in folders for link in f.links}))
    plans = []
    for f in folders:
        protected = set(f.used)
        for link in f.links:
            target = links.get(link, {}).get("target", "")
            if target.startswith(f.dir + "/"):
                protected.add(target[len(f.dir) + 1 :])
        names = to_remove(have.get(f.dir, []), f.kind, keep, protected)
        if f.leftover:  # this run's own is done by now (pruning is its last step): the others were cut off
            names += [e["name"] for e in have.get(f.dir, []) if e["kind"] == f.kind and e["name"].endswith(f.leftover)]
        if names:
            plans.append((f.dir, names))
    if not plans:
        host.noop(f"nothing older than the {keep} kept of each")
        return
    yield StringCommand("rm", "-f", QuoteString(report))
    for folder, names in plans:
        yield remote.python(python, "prune.py", "--report", report, folder, *(remote.hex_name(n) for n in names))
    yield host_log.shown(report)
