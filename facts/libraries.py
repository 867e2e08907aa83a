"""Facts about shared libraries: what the loader cannot find for given ELF files, and its cache."""

from __future__ import annotations

import re

from pyinfra.api import FactBase, StringCommand

from remote import shell

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found")


class MissingLibraries(FactBase[dict[str, list[str]]]):
    """For each existing file, the sonames `ldd` reports "not found"; files that are absent are skipped.

    library_path is the LD_LIBRARY_PATH the program will run with (the launcher sets it).
    """

    def command(self, paths: list[str], library_path: str = "") -> StringCommand:
        return shell("missing_libraries.sh", library_path, *paths)

    @staticmethod
    def default() -> dict[str, list[str]]:
        return {}

    def process(self, output: list[str]) -> dict[str, list[str]]:
        missing: dict[str, list[str]] = {}
        current = None
        for line in output:
            if line.startswith("@file "):
                current = line[6:]
                missing[current] = []
                continue
            m = _NOT_FOUND.match(line)
            if current and m and m.group(1) not in missing[current]:
                missing[current].append(m.group(1))
        return missing


class LinkerCache(FactBase[dict[str, list[str]]]):
    """What `ldconfig -p` knows: soname -> paths (64-bit entries of the host's architecture)."""

    def command(self) -> StringCommand:
        return shell("linker_cache.sh")

    @staticmethod
    def default() -> dict[str, list[str]]:
        return {}

    def process(self, output: list[str]) -> dict[str, list[str]]:
        cache: dict[str, list[str]] = {}
        for line in output:
            m = re.match(r"^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)$", line)
            if not m:
                continue
            soname, flags, path = m.groups()
            if "64" not in flags and "x86-64" not in flags and "AArch64" not in flags:
                continue  # 32-bit multilib copies do not serve a 64-bit server
            cache.setdefault(soname, []).append(path)
        return cache
