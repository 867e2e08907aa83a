"""The venv installer script (tasks/venv/scripts/venv_install.sh) on real files: uv from its pinned wheel, or pip."""

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


PART = """
touch "$1.started"
for _ in $(seq 200); do  # until every part has started: they run at once, or this one gives up
    [ -e a.started ] && [ -e b.started ] && [ -e c.started ] && exit "$2"
    sleep 0.05
done
echo "$1 waited alone" >> alone
exit 9
"""


@pytest.mark.parametrize("statuses", [("0", "0", "0"), ("0", "3", "0")])
def test_a_locks_parts_download_at_once_and_a_failed_part_fails_the_download(tmp_path: Path, statuses) -> None:
    """tasks/pip_commands.pip_at_once run for real: its parts (here stand-ins for pip that each wait until all
    have started) run at once under the venv's lock; a part that fails fails the whole; the pip
    configurations holding passwords are removed either way."""
    from pyinfra.api import StringCommand

    from tasks.venv.pip_commands import pip_at_once

    (tmp_path / "part.sh").write_text(PART)
    conf = tmp_path / ".pip-index1.conf"
    conf.write_text("[global]\nindex-url = https://ops:s3cret@wheels.example/simple/\n")
    parts = [
        StringCommand("sh", str(tmp_path / "part.sh"), name, status)
        for name, status in zip("abc", statuses, strict=True)
    ]
    command = pip_at_once(str(tmp_path / "venvs" / "venv"), parts, [str(conf)]).get_raw_value()
    res = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode == max(int(s) for s in statuses), res.stderr
    assert not (tmp_path / "alone").exists()
    assert not conf.exists() and (tmp_path / "venvs" / "venv.lock").exists()
