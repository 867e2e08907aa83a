"""The wheelhouse's record (tasks/venv/scripts/wheel_lock.py), on this machine's file system: every file with its
sha256, as pip's --require-hashes reads it; a file changed since is named and removed."""

from __future__ import annotations

from pathlib import Path

import remote

wheel_lock = remote.load("wheel_lock.py")


def wheelhouse(tmp_path: Path) -> Path:
    wh = tmp_path / "wheels"
    wh.mkdir()
    (wh / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"torch")
    (wh / "tritonclient-2.51.0-py3-none-manylinux1_x86_64.whl").write_bytes(b"tc")
    (wh / "Jinja2-3.1.4-py3-none-any.whl").write_bytes(b"j")
    (wh / ".complete").write_text("")
    return wh


def test_every_file_is_recorded_with_its_sha256_as_pip_reads_it(tmp_path: Path) -> None:
    wh = wheelhouse(tmp_path)
    assert wheel_lock.main(str(wh)) == 0
    lines = (wh / "requirements.lock").read_text().splitlines()
    names = [line.split(" ")[0] for line in lines]
    assert names == ["jinja2==3.1.4", "torch==2.13.0+cpu", "tritonclient==2.51.0"]
    torch = next(line for line in lines if line.startswith("torch=="))
    assert torch.endswith("  # torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert "--hash=sha256:" + wheel_lock.sha256(str(next(wh.glob("torch-*")))) in torch
    assert wheel_lock.check(str(wh)) == 0 and (wh / ".complete").exists()


def test_a_changed_file_is_named_and_removed_with_the_complete_marker(tmp_path: Path, capsys) -> None:
    wh = wheelhouse(tmp_path)
    wheel_lock.main(str(wh))
    (wh / "Jinja2-3.1.4-py3-none-any.whl").write_bytes(b"J")  # same size, other bytes
    assert wheel_lock.check(str(wh)) == 1
    assert "Jinja2-3.1.4-py3-none-any.whl is missing or does not match its recorded sha256" in capsys.readouterr().err
    assert not (wh / "Jinja2-3.1.4-py3-none-any.whl").exists() and not (wh / ".complete").exists()
    assert (wh / "tritonclient-2.51.0-py3-none-manylinux1_x86_64.whl").exists()  # the others stay


def test_a_source_archive_is_never_locked(tmp_path: Path, capsys) -> None:
    """An sdist (a pin with no wheel) is named with its package and removed; no lock is written."""
    wh = wheelhouse(tmp_path)
    (wh / "evil_pkg-1.0.tar.gz").write_bytes(b"sdist")
    assert wheel_lock.main(str(wh)) == 2
    err = capsys.readouterr().err
    assert "evil_pkg-1.0.tar.gz is a source archive" in err and "pin a version of evil-pkg" in err
    assert not (wh / "requirements.lock").exists() and not (wh / "evil_pkg-1.0.tar.gz").exists()
