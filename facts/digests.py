"""Fact: the sha256 and mode of small files, all read by one command (one SSH round trip)."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class FileDigest(TypedDict):
    sha256: str
    mode: str  # octal, as stat prints it: "644"


class FileDigests(FactBase[dict[str, FileDigest | None]]):
    """path -> {sha256, mode} for each given path; None where it is not a regular file."""

    def command(self, paths: list[str]) -> StringCommand:
        return shell("file_digests.sh", *paths)

    @staticmethod
    def default() -> dict[str, FileDigest | None]:
        return {}

    def process(self, output: list[str]) -> dict[str, FileDigest | None]:
        found: dict[str, FileDigest | None] = {}
        for line in output:
            mode, sha, path = line.split(" ", 2)
            found[path] = None if sha == "-" else FileDigest(sha256=sha, mode=mode)
        return found
