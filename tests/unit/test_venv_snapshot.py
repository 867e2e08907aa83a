"""The venv snapshot scripts on real files: written and unpacked per compression, read from the
persistent path once, refused when altered, never left short."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import remote

pytestmark = pytest.mark.unit

SUFFIX = {"none": ".tar", "gzip": ".tar.gz", "zstd": ".tar.zst"}


def _sh(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", remote.source(name), name, *args], capture_output=True, text=True, timeout=60)


def _venv(root: Path) -> Path:
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy("/bin/true", venv / "bin" / "python")
    (venv / "lib.bin").write_bytes(bytes(range(256)) * 4096)
    return venv


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_a_snapshot_unpacks_to_the_same_venv(tmp_path: Path, codec: str) -> None:
    if codec == "zstd" and not shutil.which("zstd"):
        pytest.fail("zstd is missing: bash scripts/setup.sh --test installs it")
    venv, folder = _venv(tmp_path), tmp_path / "snapshots"
    folder.mkdir()
    (folder / "old.tar").write_text("an older snapshot")
    snap = folder / f"key{SUFFIX[codec]}"
    assert _sh("venv_snapshot.sh", str(venv), str(folder), str(snap), snap.name, codec).returncode == 0
    assert sorted(p.name for p in folder.iterdir()) == [snap.name, f"{snap.name}.sha256"]  # the older one gone
    magic = snap.read_bytes()[:4]
    assert {
        "none": magic != b"\x1f\x8b\x08\x00" and magic != b"\x28\xb5\x2f\xfd",
        "gzip": magic[:2] == b"\x1f\x8b",
        "zstd": magic == b"\x28\xb5\x2f\xfd",
    }[codec]
    target = tmp_path / "restored"
    res = _sh("venv_restore.sh", str(target), str(snap))
    assert res.returncode == 0, res.stderr
    assert (target / "lib.bin").read_bytes() == (venv / "lib.bin").read_bytes()
    assert not (tmp_path / "restored.snapshot").exists()  # the local copy is gone


def test_an_altered_snapshot_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    venv, folder = _venv(tmp_path), tmp_path / "snapshots"
    snap = folder / "key.tar.gz"
    assert _sh("venv_snapshot.sh", str(venv), str(folder), str(snap), snap.name, "gzip").returncode == 0
    data = bytearray(snap.read_bytes())
    data[-100] ^= 1
    snap.write_bytes(bytes(data))
    target = tmp_path / "restored"
    target.mkdir()
    (target / "kept").write_text("the venv in place")
    res = _sh("venv_restore.sh", str(target), str(snap))
    assert res.returncode == 1 and "does not match its recorded sha256" in res.stderr
    assert (target / "kept").exists() and not snap.exists() and not (tmp_path / "restored.new").exists()


def test_a_tar_that_fails_leaves_no_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "snapshots"
    snap = folder / "key.tar.zst"
    res = _sh("venv_snapshot.sh", str(tmp_path / "no-such-venv"), str(folder), str(snap), snap.name, "gzip")
    assert res.returncode == 1 and "could not be written" in res.stderr
    assert list(folder.iterdir()) == []
