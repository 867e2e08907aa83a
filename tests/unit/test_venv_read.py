"""Root reads a venv without running it: the VenvPackages fact on a real venv whose package ships a .pth
file (code every interpreter started in that venv runs at startup)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from facts.venv import VenvPackages

pytestmark = pytest.mark.unit


def _fact(venv: Path):
    fact = VenvPackages()
    command = fact.command(str(venv))
    res = subprocess.run(["sh", "-c", command.get_raw_value()], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return fact.process(res.stdout.splitlines())


def test_a_pth_file_in_the_venv_is_never_run_by_the_fact(tmp_path: Path) -> None:
    venv, ran = tmp_path / "venv", tmp_path / "ran"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "evil.pth").write_text(f"import os; open({str(ran)!r}, 'w').write(str(os.getuid()))\n")
    meta = site / "evil_pkg-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\r\nName: Evil_Pkg\r\nVersion: 1.0\r\n\r\nName: not-this\n")
    fact = _fact(venv)
    assert not ran.exists(), f"the venv's interpreter ran its .pth file (uid {ran.read_text()})"
    assert fact == {"python": "{}.{}.{}".format(*sys.version_info[:3]), "packages": {"evil-pkg": "1.0"}}


def test_a_venv_whose_interpreter_leads_nowhere_is_broken_and_none_is_absent(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    for python in (venv / "bin").glob("python*"):
        python.unlink()
        python.symlink_to(tmp_path / "removed-base-python")
    assert _fact(venv) == {"python": "", "packages": {}}
    assert _fact(tmp_path / "none") is None
