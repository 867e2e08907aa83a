"""Remove the named entries under a directory, and nothing outside it.

    python3 prune.py [--empty-dirs] [--report FILE] DIRECTORY HEXNAME...

Each name is relative to DIRECTORY and comes hex-encoded (its raw bytes: a newline, a quote or bytes
that are not UTF-8 cannot split or change it). A name that is absolute, holds "..", or whose parent
is not inside DIRECTORY once links are resolved (a link that points elsewhere) is refused and kept.
A link is removed itself, never what it points to; a directory with what it holds. Runs on the
host (3.8+); exits 1 if any name was refused. --empty-dirs: then remove the directories under
DIRECTORY left empty (an upload's tree mirrors the controller's files, not its directories).
--report FILE: append a line to FILE naming what was removed and the bytes that freed.
"""

import os
import shutil
import sys

from _common import tree_size


def inside(top: bytes, path: bytes) -> bool:
    """path's parent, links resolved, is top or below it."""
    parent = os.path.realpath(os.path.dirname(path))
    return parent == top or parent.startswith(top + b"/")


def remove_empty_dirs(top: bytes) -> None:
    """Directories under top that hold nothing, deepest first; links are never followed."""
    for root, _dirs, _files in os.walk(top, topdown=False):
        if root != top and not os.listdir(root):
            os.rmdir(root)
            print(f"removed empty {root!r}", file=sys.stderr)


def main(*args: str) -> int:
    rest = list(args)
    empty_dirs = bool(rest) and rest[0] == "--empty-dirs"
    rest = rest[1:] if empty_dirs else rest
    report = ""
    if rest[:1] == ["--report"]:
        report, rest = rest[1], rest[2:]
    directory, *hex_names = rest
    top = os.path.realpath(os.fsencode(directory))
    refused, freed, removed = 0, 0, []
    for hex_name in hex_names:
        name = bytes.fromhex(hex_name)
        path = os.path.join(top, name)
        if not name or name.startswith(b"/") or b".." in name.split(b"/") or not inside(top, path):
            print(f"refused to remove {name!r}: not inside {top!r}", file=sys.stderr)
            refused += 1
            continue
        if os.path.lexists(path):
            freed += tree_size(path)
            removed.append(name.decode("utf-8", "replace"))
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
        else:
            continue
        print(f"removed {path!r}", file=sys.stderr)
    if empty_dirs:
        remove_empty_dirs(top)
    if report and removed:
        with open(report, "a") as f:
            where = top.decode("utf-8", "replace")
            f.write(f"pruned {where}: {', '.join(removed)}: {freed} bytes ({freed / 2**20:.1f} MiB) freed\n")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
