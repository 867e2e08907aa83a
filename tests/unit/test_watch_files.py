"""The test bed's file watcher (testbed/watch_files.py), which the VM tests run as `nobody` while a
provision runs, run here on a temporary tree: a file that holds the token for a moment, in a folder made
after the watch began, is named; one that never held it is not."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from testbed import watch_files

TOKEN, CANARY = "hf_unit0123456789", "canary0123456789"


def started(tmp_path: Path) -> tuple[subprocess.Popen, str]:
    """The watcher, once it watches the tree; what it said until then (the files it read first)."""
    watcher = subprocess.Popen(
        [sys.executable, watch_files.__file__, TOKEN, CANARY, str(tmp_path / "stop"), str(tmp_path / "tree")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None
    said = ""
    for line in watcher.stdout:  # the trees are watched: what is written from here on is read
        said += line
        if line.startswith("WATCHING"):
            return watcher, said
    raise AssertionError(f"the watcher ended before it watched: {watcher.wait()}")


def stopped(watcher: subprocess.Popen, tmp_path: Path) -> str:
    (tmp_path / "stop").touch()
    out, _ = watcher.communicate(timeout=30)
    return out


def test_a_file_that_holds_the_token_for_a_moment_in_a_new_folder_is_named(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "old").mkdir(parents=True)
    (tree / "old" / "canary.txt").write_text(CANARY)
    (tree / "old" / "plain.txt").write_text("nothing here")
    watcher, first = started(tmp_path)
    deep = tree / "new" / "deeper"
    deep.mkdir(parents=True)  # made after the watch began: watched as it appears
    secret = deep / "upload.part"
    secret.write_text(f"token={TOKEN}\n")  # written in the new folder, held for a moment, gone again
    outside = tmp_path / "staged"
    outside.write_text(f"token={TOKEN}\n")
    moved = tree / "old" / "token"
    outside.rename(moved)  # moved into a watched folder from outside the tree
    time.sleep(0.3)  # a moment (the watcher is event-driven: nothing waits on it here)
    secret.unlink()
    moved.unlink()
    (tree / "old" / "later.txt").write_text("still nothing")
    out = first + stopped(watcher, tmp_path)
    named = {line for line in out.splitlines() if line.startswith(("TOKEN", "CANARY"))}
    assert f"CANARY {tree / 'old' / 'canary.txt'}" in named, out
    assert f"TOKEN {secret}" in named and f"TOKEN {moved}" in named, out
    assert not {line for line in named if "plain.txt" in line or "later.txt" in line}, out
    reads = int(out.split("READS ")[1].split()[0])
    assert reads >= 5, out  # the two old files, the two new ones and the last one at least
