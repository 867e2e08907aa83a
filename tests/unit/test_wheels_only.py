"""Wheels only: the pip download the venv step builds never runs an sdist's build backend (its author's
code, as root on a host), and says which pin has no wheel. Real pip (the controller's) on a find-links
folder that holds a source archive whose in-tree backend leaves a mark when anything runs it."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import remote
from tasks.venv.pip_commands import pip_download
from tasks.venv.plan import VenvPlan

pytestmark = pytest.mark.unit

BACKEND = """
import os
def _mark(*_a, **_k):
    with open(os.environ["MARK_FILE"], "a") as f:
        f.write(f"uid={os.getuid()}\\n")
    return []
get_requires_for_build_wheel = get_requires_for_build_sdist = _mark
def prepare_metadata_for_build_wheel(*a, **k):
    _mark()
    raise RuntimeError("ran")
build_wheel = prepare_metadata_for_build_wheel
"""


def _sdist(folder: Path) -> Path:
    """evil_pkg-1.0.tar.gz: a pyproject with an in-tree backend (no build dependency to fetch)."""
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": BACKEND,
        "PKG-INFO": "Metadata-Version: 2.1\nName: evil-pkg\nVersion: 1.0\n",
    }
    path = folder / "evil_pkg-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"evil_pkg-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_pin_with_only_an_sdist_is_refused_by_name_and_its_build_never_runs(tmp_path: Path) -> None:
    links, dest, mark = tmp_path / "links", tmp_path / "wheelhouse", tmp_path / "mark"
    links.mkdir()
    _sdist(links)
    plan = VenvPlan(venv_dir=sys.prefix, python=sys.executable, python_minor="3.11", requirements={},
                    wheelhouse=str(dest), pip_cache=str(tmp_path / "cache"))  # fmt: skip
    command = pip_download(plan, ["--no-index", "--find-links", str(links)], "evil-pkg==1.0", locked=False)
    res = subprocess.run(
        ["python3", "-c", remote.source("live.py"), "wheels (index)", "sh", "-c", command.get_raw_value()],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "MARK_FILE": str(mark)},
    )  # fmt: skip
    assert not mark.exists(), f"the sdist's build backend ran: {mark.read_text()}"
    assert res.returncode != 0
    assert "wheels (index): evil-pkg==1.0 has no wheel for this host's Python and platform" in res.stderr
    assert not list(dest.glob("*.tar.gz"))


def test_the_pinned_pip_downloads_where_the_venvs_python_runs_it() -> None:
    """pip 26.0 runs on Python 3.9+ (its Requires-Python): an older venv's Python downloads with its own pip."""
    got = {
        minor: VenvPlan(venv_dir="/v", python="/p", python_minor=minor, requirements={}, wheelhouse="/w").pip_downloader
        for minor in ("3.8", "3.9", "3.13", "")
    }
    assert got == {"3.8": "", "3.9": "/w/tools/pip-26.0-py3-none-any.whl", "3.13": got["3.9"], "": ""}
