# Shared by the Python host scripts: inlined where a script says `from _common import ...`.
# No `from __future__` here: it would land in the middle of the script.
import contextlib as _contextlib
import hashlib as _hashlib
import os as _os
import sys as _sys


def printable(line: str) -> str:
    """line as it may reach a terminal: control characters (escape sequences the server's user could write
    into a log to rewrite what the operator sees) shown as \\xNN, tabs kept."""
    return "".join(c if c == "\t" or (c >= " " and c != "\x7f" and not "\x80" <= c <= "\x9f") else f"\\x{ord(c):02x}"
                   for c in line)  # fmt: skip


def proof(line: str) -> None:
    """Say it on stderr, and append it to $TRITON_PROOF_FILE, which the deploy shows."""
    print(line, file=_sys.stderr, flush=True)
    path = _os.environ.get("TRITON_PROOF_FILE")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def sha256(path: str) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    h = _hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_size(path) -> int:
    """Bytes a file, link or directory tree takes (the sizes of what it holds; links not followed);
    0 where it is absent."""
    if not _os.path.isdir(path) or _os.path.islink(path):
        return _os.lstat(path).st_size if _os.path.lexists(path) else 0
    total = 0
    for root, dirs, files in _os.walk(path):
        for name in dirs + files:
            with _contextlib.suppress(OSError):  # removed meanwhile
                total += _os.lstat(_os.path.join(root, name)).st_size
    return total


def marker_name(repo: str, revision: str) -> str:
    """hub_fetch.py's marker file for repo@revision: its bytes in hex (any repo name is a safe name)."""
    return f"{repo}@{revision}".encode().hex() + ".json"
