"""Fact: the entries under a directory, read so that hostile names arrive intact (NUL-separated, hex)."""

from __future__ import annotations

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
