"""Facts about free space where we install and where caches persist."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class FreeSpaceData(TypedDict):
    existing: str  # its nearest existing ancestor, which df measured
    mount: str
    fs_type: str  # the kernel's name (findmnt's FSTYPE): ext4, overlay, fuse.drive (Colab's Google Drive); "" unread
    free_bytes: int
    total_bytes: int


class FreeSpace(FactBase[FreeSpaceData | None]):
    """Free and total bytes of the file system that holds path (or would, once made), and its type."""

    def command(self, path: str) -> StringCommand:
        return shell("free_space.sh", path)

    def process(self, output: list[str]) -> FreeSpaceData | None:
        existing = fs_type = ""
        for line in output:
            if line.startswith("PATH="):
                existing = line[5:]
                continue
            if line.startswith("TYPE="):
                fs_type = line[5:].strip()
                continue
            cols = line.split(None, 5)  # the mount point is the rest of the line (it may hold spaces)
            if len(cols) == 6 and cols[1].isdigit() and cols[3].isdigit():
                return FreeSpaceData(
                    existing=existing,
                    mount=cols[5],
                    fs_type=fs_type,
                    free_bytes=int(cols[3]) * 1024,
                    total_bytes=int(cols[1]) * 1024,
                )
        return None
