"""Facts about files, read so that hostile names arrive intact (NUL-separated or hex): the entries
under a directory, and where links point."""

from __future__ import annotations

from typing import Literal, TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class TreeEntries(FactBase[list[str]]):
    """Names relative to a directory: `files` (all but directories, any depth) or `children` (every
    entry directly inside). Undecodable bytes survive as surrogates; [] where the directory is absent."""

    def command(self, path: str, kind: str = "files") -> StringCommand:
        return shell("tree_entries.sh", path, kind)

    @staticmethod
    def default() -> list[str]:
        return []

    def process(self, output: list[str]) -> list[str]:
        raw = bytes.fromhex("".join("".join(output).split()))
        return sorted(name.decode("utf-8", "surrogateescape") for name in raw.split(b"\0") if name)


class LinkData(TypedDict):
    kind: str  # link, dir (a real directory), other, absent
    target: str  # where a link points ("" for the rest)


class Links(FactBase[dict[str, LinkData]]):
    """Each path: a link and its target, a real directory, something else, or nothing; one round trip."""

    def command(self, paths: list[str]) -> StringCommand:
        return shell("links.sh", *paths)

    @staticmethod
    def default() -> dict[str, LinkData]:
        return {}

    def process(self, output: list[str]) -> dict[str, LinkData]:
        out: dict[str, LinkData] = {}
        for line in output:
            kind, path, target = ([*line.split(" "), "", ""])[:3]
            if kind in ("link", "dir", "other", "absent"):
                out[_unhex(path)] = LinkData(kind=kind, target=_unhex(target) if kind == "link" else "")
        return out


def _unhex(text: str) -> str:
    return bytes.fromhex(text).decode("utf-8", "surrogateescape")


EntryKind = Literal["directory", "file", "link", "other"]
# find's %y letter -> the entry's kind (any other letter: a device, a socket, a FIFO ...)
_ENTRY_KINDS: dict[str, EntryKind] = {"d": "directory", "f": "file", "l": "link"}


class AgedEntry(TypedDict):
    name: str
    mtime: float  # seconds since the epoch
    kind: EntryKind


class AgedEntries(FactBase[dict[str, list[AgedEntry]]]):
    """Each directory's entries (directly inside it) with their modification times, newest first;
    one round trip for all of them. A missing directory has none."""

    def command(self, dirs: list[str]) -> StringCommand:
        return shell("aged_entries.sh", *dirs)

    @staticmethod
    def default() -> dict[str, list[AgedEntry]]:
        return {}

    def process(self, output: list[str]) -> dict[str, list[AgedEntry]]:
        chunks: dict[str, list[str]] = {}
        current: list[str] = []
        for line in output:
            if line.startswith("DIR "):
                current = chunks.setdefault(_unhex(line[4:].strip()), [])
            else:
                current.append(line)
        out: dict[str, list[AgedEntry]] = {}
        for directory, lines in chunks.items():
            entries = []
            for raw in bytes.fromhex("".join("".join(lines).split())).split(b"\0"):
                mtime, _, rest = raw.partition(b" ")
                kind, _, name = rest.partition(b" ")
                if name:
                    entries.append(
                        AgedEntry(
                            name=name.decode("utf-8", "surrogateescape"),
                            mtime=float(mtime),
                            kind=_ENTRY_KINDS.get(kind.decode(), "other"),
                        )
                    )
            out[directory] = sorted(entries, key=lambda e: (-e["mtime"], e["name"]))
        return out


class UserAccess(FactBase[dict[str, str]]):
    """For each path, the directory on the way to it that `user` (the server's) cannot enter, checked as
    that user (as nobody before it exists); "" where it reaches the path, a part not made yet, or where
    nothing is checked (the user is root). Paths are settings: absolute, without control characters."""

    def command(self, user: str, paths: list[str]) -> StringCommand:
        return shell("user_access.sh", user, *paths)

    @staticmethod
    def default() -> dict[str, str]:
        return {}

    def process(self, output: list[str]) -> dict[str, str]:
        access: dict[str, str] = {}
        for line in output:
            parts = line.split("\t")
            if parts[0] == "ACCESS" and len(parts) in (2, 3):  # an empty last field may arrive stripped
                access[parts[1]] = parts[2] if len(parts) == 3 else ""
        return access


class UnsafePart(TypedDict):
    part: str  # the first directory (or link) on the way another user than root may change
    uid: int
    mode: str  # octal, as stat prints it: "1777"
    kind: str  # "directory", "symbolic link" ...


class UnsafeAncestors(FactBase[dict[str, UnsafePart]]):
    """For each path root installs into or runs from, the first part on the way (itself included) that
    another user than root may write or replace: owned by someone else, or writable by group or others
    (a sticky /tmp too). A path absent from the result is safe (parts not made yet are made root's)."""

    def command(self, paths: list[str]) -> StringCommand:
        return shell("unsafe_ancestors.sh", *paths)

    @staticmethod
    def default() -> dict[str, UnsafePart]:
        return {}

    def process(self, output: list[str]) -> dict[str, UnsafePart]:
        found: dict[str, UnsafePart] = {}
        for line in output:
            parts = line.split("\t")
            if parts[0] == "UNSAFE" and len(parts) == 6 and parts[3].isdigit():
                found[parts[1]] = UnsafePart(part=parts[2], uid=int(parts[3]), mode=parts[4], kind=parts[5])
        return found
