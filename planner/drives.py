"""Drives whose file semantics are not a local disk's, known by the type the kernel gives their mount, and the
audit's line for a persist_dir on one: what the drive refuses and what the provision does about it."""

from __future__ import annotations

from dataclasses import dataclass

from planner.items import Item, ok


@dataclass(frozen=True)
class Drive:
    """What a drive refuses that a local disk takes."""

    name: str
    semantics: str  # what it takes and keeps, in words, for the audit


# The mount's type as findmnt names it -> the drive. Sources:
#   fuse.drive  Colab's Google Drive (drive.mount('/content/drive')): no symbolic or hard links (EOPNOTSUPP),
#               every file root's 0600 and every folder 0700 whatever chmod asks, no execute bits kept
#               (shared/notes/real-parts.md; googlecolab/colabtools#3162, #906; huggingface/diffusers#2729).
#               The test bed's FUSE `--drive` mounts with this type and these semantics (testbed/throttle.py).
DRIVES: dict[str, Drive] = {
    "fuse.drive": Drive(
        "Google Drive as Colab mounts it",
        "takes no symbolic or hard links and keeps no modes (every file root's 0600 and every folder 0700 "
        "whatever chmod asks, no execute bits)",
    ),
}

# What the provision does on such a drive (each proven on the test bed's `--drive`: test_notebook_inside.py).
WHAT_THE_PROVISION_DOES = (
    "the hub cache keeps the files themselves where a link is refused; no mode is enforced there where the "
    "server runs as root; the caches are trusted by their sha256, not by their modes; Triton, Python and the "
    "venv are installed on the local disk, so nothing runs from the drive"
)


def drive_item(path: str, fs_type: str) -> Item | None:
    """The audit's line for a persist_dir on a drive of DRIVES; None on any other file system."""
    drive = DRIVES.get(fs_type)
    if drive is None:
        return None
    detail = f"{path} is on {drive.name} ({fs_type}), which {drive.semantics}: {WHAT_THE_PROVISION_DOES}"
    return ok("persist drive", detail)
