"""Facts about apt's cache on the persistent path: whether it can install packages without the network."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class AptNeeds(TypedDict):
    lists: bool  # the cache holds package lists
    debs: list[str]  # .deb files apt would download (the cache lacks them)
    unknown: list[str]  # packages its lists do not know
    errors: list[str]  # apt's other errors


class AptDownloads(FactBase[AptNeeds]):
    """What installing packages would download with the cache's lists and archives (apt-get
    --print-uris): nothing where the cache can install them offline."""

    def command(self, cache_dir: str, packages: list[str]) -> StringCommand:
        return shell("apt_downloads.sh", cache_dir, *packages)

    @staticmethod
    def default() -> AptNeeds:
        return {"lists": True, "debs": [], "unknown": [], "errors": []}

    def process(self, output: list[str]) -> AptNeeds:
        needs = self.default()
        for line in output:
            if line == "LISTS=absent":
                needs["lists"] = False
            elif line.startswith("'"):  # 'URL' FILE SIZE HASH
                parts = line.split()
                if len(parts) >= 2:
                    needs["debs"].append(parts[1])
            elif line.startswith("E: Unable to locate package "):
                needs["unknown"].append(line.rsplit(" ", 1)[-1])
            elif line.startswith("E: "):
                needs["errors"].append(line[3:])
        return needs
