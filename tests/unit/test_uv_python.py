"""tasks/python/scripts/uv_python.sh run for real on temporary trees, with a stand-in `uv` binary in the tools folder
(what the wheel unpacks to) that lays out what `uv python install` does: the checks after uv, the marker,
the modes, and uv's own failure."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

import remote

VERSION = "0.13.9"
BUILD = "cpython-3.12.5-linux-x86_64-gnu"


def fake_uv(tools: Path, extra: str = "", fails: bool = False) -> None:
    """A `uv` that installs a CPython tree as uv does (a build directory, a link per minor, a 0666 lock)."""
    body = (
        "exit 3"
        if fails
        else f"""
d="$UV_PYTHON_INSTALL_DIR"
mkdir -p "$d/{BUILD}/bin" "$d/{BUILD}/lib"
printf '#!/bin/sh\\nexec {sys.executable} "$@"\\n' > "$d/{BUILD}/bin/python3.12"
chmod 755 "$d/{BUILD}/bin/python3.12"
ln -sfn "$d/{BUILD}" "$d/cpython-3.12-linux-x86_64-gnu"
: > "$d/.lock" && chmod 666 "$d/.lock"
echo "$@" > "$d/uv-args"
env | grep '^UV_' | sort > "$d/uv-env"
{extra}
"""
    )
    uv = tools / f"uv-{VERSION}" / "uv"
    uv.parent.mkdir(parents=True)
    uv.write_text("#!/bin/sh\n" + body)
    uv.chmod(0o755)


def run(tmp: Path, *extra_args: str) -> subprocess.CompletedProcess:
    args = [
        str(tmp / "uv.whl"),  # absent: the binary is already in the tools folder
        str(tmp / "tools"),
        VERSION,
        str(tmp / "python"),
        str(tmp / "persist" / "python-downloads"),
        str(tmp / "persist" / "uv-cache"),
        "3.12",
        "3.12",
        "x86_64",
        *extra_args,
    ]
    return subprocess.run(
        ["sh", "-c", remote.source("uv_python.sh"), "uv_python.sh", *args], capture_output=True, text=True, timeout=60
    )


def test_a_cpython_uv_installs_is_checked_made_unwritable_and_marked(tmp_path: Path) -> None:
    fake_uv(tmp_path / "tools")
    res = run(tmp_path, "https://mirror.example/pbs", "", "offline", "ab" * 32)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "python" / ".provisioner-3.12").exists()
    assert f"at {tmp_path}/python/cpython-3.12-linux-x86_64-gnu (uv {VERSION})" in res.stdout
    assert not stat.S_IMODE((tmp_path / "python" / ".lock").stat().st_mode) & 0o022  # uv's 0666 lock repaired
    assert (tmp_path / "python" / "uv-args").read_text().split() == [
        "python",
        "install",
        "--no-bin",
        "--color",
        "never",
        "--offline",
        "3.12",
    ]
    env = (tmp_path / "python" / "uv-env").read_text()
    assert f"UV_PYTHON_CACHE_DIR={tmp_path}/persist/python-downloads\n" in env
    assert "UV_PYTHON_INSTALL_MIRROR=https://mirror.example/pbs\n" in env and "UV_NO_CONFIG=1\n" in env
    assert "UV_PYTHON_DOWNLOADS_JSON_URL" not in env  # not set: uv's own list


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (f'touch "$d/{BUILD}/lib/x" && chmod 4755 "$d/{BUILD}/lib/x"', "is set-id"),
        (f'ln -s /etc/passwd "$d/{BUILD}/lib/out"', "points outside"),
        (f'mkfifo "$d/{BUILD}/lib/pipe"', "not a plain file"),
    ],
)
def test_a_tree_with_a_set_id_file_a_link_out_or_a_device_is_refused_unmarked(
    tmp_path: Path, extra: str, why: str
) -> None:
    fake_uv(tmp_path / "tools", extra=extra)
    res = run(tmp_path, "", "", "", "ab" * 32)
    assert res.returncode != 0 and why in res.stderr, res.stderr
    assert not (tmp_path / "python" / ".provisioner-3.12").exists()


def test_uv_failing_leaves_no_marker_and_an_old_marker_goes(tmp_path: Path) -> None:
    fake_uv(tmp_path / "tools", fails=True)
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / ".provisioner-3.12").touch()  # a run before; this one must prove it again
    res = run(tmp_path, "", "", "", "ab" * 32)
    assert res.returncode != 0
    assert not (tmp_path / "python" / ".provisioner-3.12").exists()


def test_a_uv_wheel_whose_sha256_is_not_pinned_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "uv.whl").write_bytes(b"not the pinned wheel")
    res = run(tmp_path, "", "", "", "ab" * 32)
    assert res.returncode != 0
    assert "does not match uv 0.13.9's sha256" in res.stderr and "no usable wheel" in res.stderr
    assert not (tmp_path / "tools" / f"uv-{VERSION}").exists() or not any(
        (tmp_path / "tools" / f"uv-{VERSION}").iterdir()
    )
