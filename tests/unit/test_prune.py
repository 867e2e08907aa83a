"""Removing what a directory should not hold, with hostile names, on this machine's file system:
the names read back by the TreeEntries command, the host's prune.py removing only inside."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import remote
from facts.files import TreeEntries

prune = remote.load("prune.py")


def entries(top: Path, kind: str) -> list[str]:
    """TreeEntries for real: its script run here by sh, its output through process()."""
    out = subprocess.run(
        ["sh", "-c", remote.source("tree_entries.sh"), "tree_entries.sh", str(top), kind],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return TreeEntries().process(out.splitlines())


def hostile_tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    (outside / "etc").mkdir(parents=True)
    (outside / "etc" / "passwd").write_text("root\n")
    (outside / "victim").write_text("keep me\n")
    top = tmp_path / "dest"
    (top / "a\n" / "etc").mkdir(parents=True)
    (top / "a\n" / "etc" / "passwd").write_text("x\n")  # its path, split on newlines, once read /etc/passwd
    (top / "keep.whl").write_text("k\n")
    (top / "it's old.whl").write_text("o\n")
    (top / os.fsdecode(b"lat\xe9.whl")).write_text("l\n")
    (top / "link.whl").symlink_to(outside / "victim")
    (top / "out").symlink_to(outside)  # a link to a directory outside
    return top, outside


def test_every_hostile_name_arrives_intact_and_only_what_is_inside_goes(tmp_path: Path) -> None:
    top, outside = hostile_tree(tmp_path)
    names = entries(top, "files")
    assert names == sorted(
        ["a\n/etc/passwd", "it's old.whl", os.fsdecode(b"lat\xe9.whl"), "keep.whl", "link.whl", "out"]
    )
    extra = [n for n in names if n != "keep.whl"]
    assert prune.main(str(top), *(remote.hex_name(n) for n in extra)) == 0
    assert sorted(os.listdir(top)) == ["a\n", "keep.whl"]  # the emptied directory stays; its file went
    assert (outside / "victim").read_text() == "keep me\n" and (outside / "etc" / "passwd").exists()


def test_names_that_leave_the_directory_are_refused(tmp_path: Path) -> None:
    top, outside = hostile_tree(tmp_path)
    hostile = ["out/victim", "../outside/victim", str(outside / "victim"), ""]
    assert prune.main(str(top), *(remote.hex_name(n) for n in hostile)) == 1
    assert (outside / "victim").read_text() == "keep me\n"


def test_children_of_a_model_repository(tmp_path: Path) -> None:
    top, _ = hostile_tree(tmp_path)
    assert "a\n" in entries(top, "children") and "a\n/etc/passwd" not in entries(top, "children")
    assert prune.main(str(top), remote.hex_name("a\n")) == 0
    assert not (top / "a\n").exists()


def test_report_names_what_was_removed_and_the_bytes_freed(tmp_path: Path) -> None:
    top = tmp_path / "versions"
    (top / "old" / "lib").mkdir(parents=True)
    (top / "old" / "lib" / "a.so").write_bytes(b"x" * 3000)
    (top / "old" / "bin").mkdir()
    (top / "old" / "bin" / "tritonserver").write_bytes(b"y" * 1000)
    (top / "new").mkdir()
    (top / "new" / "big").write_bytes(b"z" * 5000)
    report = tmp_path / "pruned.txt"
    assert prune.main("--report", str(report), str(top), remote.hex_name("old")) == 0
    assert sorted(os.listdir(top)) == ["new"]
    dirs = 2 * os.lstat(top / "new").st_size  # lib/ and bin/ count as what a directory entry takes
    line = report.read_text().strip()
    assert line.startswith(f"pruned {top}: old: ")
    assert line.split(": ")[2] == f"{4000 + dirs} bytes ({(4000 + dirs) / 2**20:.1f} MiB) freed"
