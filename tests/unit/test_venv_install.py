"""The venv installer script (remote/venv_install.sh) on real files: uv from its pinned wheel, or pip."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

import remote

pytestmark = pytest.mark.unit


def _sh(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", remote.source(name), name, *args], capture_output=True, text=True, timeout=60)


def test_the_installer_refuses_an_altered_uv_wheel_and_installs_with_pip(tmp_path: Path) -> None:
    """venv_install.sh: a uv wheel whose sha256 is not uv's is named and not used; pip installs."""
    venv, wheelhouse, tools = tmp_path / "venv", tmp_path / "wh", tmp_path / "tools"
    (venv / "bin").mkdir(parents=True)
    (wheelhouse / "tools").mkdir(parents=True)
    pip = venv / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/pip-args\n')
    pip.chmod(0o755)
    whl = wheelhouse / "tools" / "uv-0.13.9-py3-none-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("uv-0.13.9.data/scripts/uv", "#!/bin/sh\necho planted\n")
    lock = wheelhouse / "requirements.lock"
    lock.write_text("")
    res = _sh("venv_install.sh", str(venv), str(wheelhouse), str(lock), "", str(tools), "0.13.9", "0" * 64)
    assert res.returncode == 0, res.stderr
    assert f"{whl} does not match uv 0.13.9's sha256" in res.stderr and "installing with pip" in res.stderr
    assert not (tools / "uv-0.13.9" / "uv").exists()
    assert (
        "--no-index" in (tmp_path / "pip-args").read_text()
        and "--require-hashes" in (tmp_path / "pip-args").read_text()
    )
    # the same wheel, its sha256 allowed: its binary is unpacked once and installs
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    res = _sh("venv_install.sh", str(venv), str(wheelhouse), str(lock), "", str(tools), "0.13.9", digest)
    assert res.returncode == 0 and "planted" in res.stdout
